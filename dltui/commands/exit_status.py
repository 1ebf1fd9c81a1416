"""How a command that ran benchmarks exits: as its worst job ended."""

from __future__ import annotations

from dltui.protocol.messages import JobState

JOB_EXIT: dict[JobState, int] = {"failed": 1, "refused": 2, "cancelled": 130, "done": 0}
"""130: as a shell reports a command stopped by Ctrl-C."""
