"""What the GPU tests share: a sampler that keeps every sample and waits on conditions, and
PyTorch where it sees a CUDA device."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from dltui.protocol.messages import Sample
from dltui.telemetry.sampler import Sampler

TIMEOUT = 30.0


class Recorder:
    """Runs a 10 Hz sampler and keeps every sample; waits on conditions, not on clocks."""

    def __init__(self, rate_hz: float = 10.0) -> None:
        self.samples: list[Sample] = []
        self._changed = threading.Condition()
        self.sampler = Sampler(rate_hz, self._keep)

    def _keep(self, sample: Sample) -> None:
        with self._changed:
            self.samples.append(sample)
            self._changed.notify_all()

    def wait_for(self, condition: Callable[[list[Sample]], bool]) -> None:
        with self._changed:
            met = self._changed.wait_for(lambda: self.samples and condition(self.samples), TIMEOUT)
            assert met, f"not met after {TIMEOUT} s and {len(self.samples)} samples"

    def between(self, start: float, end: float, index: int, name: str) -> list[float]:
        with self._changed:
            samples = [s for s in self.samples if start <= s.mono <= end]
        return [s.gpus[index].values[name] for s in samples if name in s.gpus[index].values]

    def __enter__(self) -> Recorder:
        self.sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sampler.stop()


def torch_cuda():
    """PyTorch, where it sees a CUDA device; the test skips otherwise."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return torch
