"""A neighbour process that names itself with any bytes (prctl PR_SET_NAME), as any local
user can: NAMED runs in `python -c NAMED HEX_NAME`, prints a line once named, then waits."""

from __future__ import annotations

NAMED = ("import ctypes, sys; ctypes.CDLL(None).prctl(15, bytes.fromhex(sys.argv[1]), 0, 0, 0); "
         "print(flush=True); sys.stdin.read()")  # fmt: skip
HOSTILE_COMM = b"\xff\xfe\x1b]0;x\x07[/]"
