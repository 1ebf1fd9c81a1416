"""Scaling efficiency of training runs, derived from the results themselves.

A result is judged against other results of the same configuration reported by the same
server: one GPU (scale-up: throughput on N ÷ N × throughput on 1) and one whole server
(scale-out: throughput over S servers ÷ S × one server's). Nothing is stored twice: the CLI,
the TUI and the report all derive it here from the results they hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dltui.plans.formulas import scaling_efficiency
from dltui.protocol.bench_results import ModelResult


@dataclass(frozen=True, slots=True)
class Scaling:
    vs_one_gpu: float | None = None
    vs_one_server: float | None = None


def throughput(result: ModelResult) -> float | None:
    """A run's figure: tokens/s for a GPT model, images/s for a CNN."""
    return result.tokens_per_s if result.seq_len is not None else result.images_per_s


def throughput_unit(result: ModelResult) -> str:
    return "tok/s" if result.seq_len is not None else "img/s"


def configuration(result: ModelResult) -> tuple[object, ...]:
    """What must match for one result to be another's baseline: all but the GPU count."""
    return (result.framework, result.model, result.device, result.precision, result.batch,
            result.image_size, result.compiled, result.channels_last, result.data,
            result.seq_len, result.parallel)  # fmt: skip


def scaling(results: Sequence[tuple[str, ModelResult]]) -> list[Scaling]:
    """For each (server, result), its efficiency against the latest matching baseline among
    `results`; None where there is no baseline (or the result is the baseline itself)."""
    rates: dict[tuple[object, ...], float] = {}
    for server, result in results:
        rate = throughput(result)
        if result.error is None and rate and result.servers == 1:
            rates[(server, configuration(result), result.gpus)] = rate
    found = []
    for server, result in results:
        key = (server, configuration(result))
        one_gpu = rates.get((*key, 1))
        per_server = result.gpus // result.servers if result.servers else 0
        one_server = rates.get((*key, per_server)) if result.servers > 1 else None
        rate = throughput(result)
        found.append(
            Scaling(
                scaling_efficiency(rate, one_gpu, result.gpus)
                if rate and one_gpu and result.gpus > 1
                else None,
                scaling_efficiency(rate, one_server, result.servers)
                if rate and one_server
                else None,
            )
        )
    return found
