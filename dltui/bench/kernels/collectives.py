"""The collectives a rank times, each with its buffers, one call and a check of what it gave.

Sizes are nccl-tests': `floats` is an all-reduce's or a broadcast's buffer, an all-gather's
gathered output, a reduce-scatter's input and what each rank sends in an all-to-all; the last
three split it in equal parts, one a rank. Each check runs once before the timing on values
that say where they came from (the sending rank, and for an all-to-all its destination), so a
collective that moved the wrong part fails the case instead of reporting a bandwidth.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Step = Callable[[], object]


@dataclass(frozen=True, slots=True)
class Prepared:
    step: Step
    """One call of the collective on the prepared buffers."""
    check: Callable[[], str | None]
    """After one call: None, or what was wrong."""
    reset: Callable[[], object]
    """Before the timing: leave buffers whose repeated calls stay finite."""
    start: Callable[[], Any] | None = None
    """One call begun, returning what `.wait()`s for its end (all-reduce: what DDP does)."""


def elements(op: str, floats: int, world: int) -> int:
    """The elements actually moved: the split collectives need a multiple of the ranks."""
    if op in ("allgather", "reducescatter", "alltoall"):
        return max(world, floats - floats % world)
    return floats


def prepare(torch: Any, op: str, floats: int, rank: int, world: int, device: Any) -> Prepared:
    """Buffers on `device` for one collective of `floats` elements (float32) on `world` ranks."""
    import torch.distributed as dist

    count = elements(op, floats, world) // world  # one rank's part, for the split ones

    def full(size: int, value: float) -> Any:
        return torch.full((size,), float(value), dtype=torch.float32, device=device)

    def parts(values: list[float]) -> Any:
        """A buffer of `world` parts, part j all values[j]."""
        return torch.tensor(values, dtype=torch.float32, device=device).repeat_interleave(count)

    def differs(got: Any, expected: Any) -> str | None:
        if bool((got == expected).all()):
            return None
        return f"{op} gave {got.min().item()}..{got.max().item()}, expected other values"

    if op == "allreduce":
        buffer = full(floats, rank + 1)
        total = world * (world + 1) / 2
        return Prepared(
            lambda: dist.all_reduce(buffer), lambda: differs(buffer, full(floats, total)),
            buffer.zero_,  # repeated sums of zeros stay finite
            lambda: dist.all_reduce(buffer, async_op=True),
        )  # fmt: skip
    if op == "broadcast":
        buffer = full(floats, rank + 1)
        return Prepared(lambda: dist.broadcast(buffer, 0),
                        lambda: differs(buffer, full(floats, 1)), lambda: None)  # fmt: skip
    if op == "allgather":
        mine, gathered = full(count, rank + 1), full(count * world, 0)
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        expected = parts([r + 1 for r in range(world)])
        return Prepared(lambda: gather(gathered, mine), lambda: differs(gathered, expected),
                        lambda: None)  # fmt: skip
    if op == "reducescatter":
        # Part j of rank r holds (r + 1)(j + 1): rank j's sum is (j + 1) · world(world + 1)/2.
        source, mine = parts([(rank + 1) * (j + 1) for j in range(world)]), full(count, 0)
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        expected = full(count, (rank + 1) * world * (world + 1) / 2)
        return Prepared(lambda: scatter(mine, source), lambda: differs(mine, expected),
                        lambda: None)  # fmt: skip
    if op == "alltoall":
        # Part j of rank r holds r·world + j: rank j gets r·world + j from every rank r.
        source = parts([rank * world + j for j in range(world)])
        received = full(count * world, -1)
        expected = parts([r * world + rank for r in range(world)])
        return Prepared(lambda: dist.all_to_all_single(received, source),
                        lambda: differs(received, expected), lambda: None)  # fmt: skip
    raise ValueError(f"unknown collective {op!r}")
