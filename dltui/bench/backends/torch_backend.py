"""PyTorch kernels: GEMM, convolution, RNN and copy bandwidth, each timed on the device.

On a GPU every iteration sits between two CUDA events, queued back to back so the device never
waits for the host between iterations; on a CPU the kernels are synchronous and a wall clock
suffices. Imported only by the worker: `import torch` happens in TorchBackend().
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from dltui.bench.backends import (
    MIN_TIMED,
    Budget,
    Unsupported,
    wall_clock_times,
    warm_up,
)
from dltui.bench.shapes import BandwidthCase, Case, ConvCase, GemmCase, RnnCase

Step = Callable[[], object]
_DTYPES = {
    "fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16", "mixed": "float16",
}  # fmt: skip


class TorchBackend:
    framework = "torch"

    def __init__(self, device: str) -> None:
        import torch

        self._torch = torch
        has_gpu = torch.cuda.is_available()
        if device == "cuda" and not has_gpu:
            raise RuntimeError("the plan asks for CUDA, but PyTorch sees no CUDA GPU")
        self.on_gpu = has_gpu and device != "cpu"
        self.device = "cuda:0" if self.on_gpu else "cpu"
        self.gpu_count = torch.cuda.device_count() if self.on_gpu else 0
        if self.on_gpu:
            # Let cuDNN try its algorithms on the first call per shape (a warm-up), as
            # DeepBench picks the fastest with cudnnFind*.
            torch.backends.cudnn.benchmark = True
        torch.manual_seed(0)

    def time_case(
        self, kind: str, case: Case, direction: str, precision: str, budget: Budget
    ) -> list[float]:
        if isinstance(case, BandwidthCase):
            return self._copy_times(case, budget)
        dtype = set_precision(self._torch, precision)
        if isinstance(case, GemmCase):
            step = gemm_step(self._torch, case, dtype, self.device)
        elif isinstance(case, ConvCase):
            step = conv_step(self._torch, case, direction, dtype, self.device)
        elif isinstance(case, RnnCase):
            step = rnn_step(self._torch, case, direction, dtype, self.device)
        else:
            raise Unsupported(f"the torch backend has no {kind} kernel")
        if self.on_gpu:
            return cuda_event_times(self._torch, step, budget)
        return wall_clock_times(step, _nothing, budget)

    def _copy_times(self, case: BandwidthCase, budget: Budget) -> list[float]:
        torch = self._torch
        if case.on_host:
            src = torch.ones(case.nbytes, dtype=torch.uint8)
            dst = torch.zeros_like(src)
            return wall_clock_times(lambda: dst.copy_(src), _nothing, budget)
        if not self.on_gpu:
            raise Unsupported(f"no GPU: {case.direction} copies need one")
        src, dst, stream_device = copy_buffers(torch, case)
        # A copy runs on the current stream of its source GPU (of the GPU, for host copies):
        # the events must be recorded there.
        with torch.cuda.device(stream_device):
            return cuda_event_times(torch, lambda: dst.copy_(src, non_blocking=True), budget)


def _nothing() -> None:
    """CPU kernels return when they are done: nothing to wait for."""


def set_precision(torch: Any, precision: str) -> Any:
    """Set the math flags for `precision` (every flag, every time: precisions alternate within
    one process) and return the tensor dtype."""
    fp32_math = "tf32" if precision == "tf32" else "ieee"
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):  # torch >= 2.9 deprecates the allow_tf32 flags
        matmul.fp32_precision = fp32_math
        torch.backends.cudnn.conv.fp32_precision = fp32_math
        torch.backends.cudnn.rnn.fp32_precision = fp32_math
    else:
        matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
    # mixed: fp16 in, fp32 accumulation all the way (no fp16 split-K reductions in cuBLAS).
    # cuDNN accumulates fp16 convolutions in fp32 anyway, so there fp16 and mixed coincide.
    matmul.allow_fp16_reduced_precision_reduction = precision != "mixed"
    return getattr(torch, _DTYPES[precision])


# --- kernels: each returns a step that launches one iteration -----------------------------------


def gemm_operands(torch: Any, case: GemmCase, dtype: Any, device: str) -> tuple[Any, Any]:
    """op(A)ᵀ (k×m) and op(B)ᵀ (n×k) as row-major views of DeepBench's column-major buffers.

    cuBLAS is column-major: C(m×n) = op(A)·op(B). The same memory read row-major is
    Cᵀ(n×m) = op(B)ᵀ·op(A)ᵀ, so multiplying these two views hands cuBLAS exactly DeepBench's
    call (a naive row-major M×K·K×N mapping leaves leading dimensions unaligned and runs some
    shapes 3× slower; see REFERENCE.md). A transposed operand is stored the other way round
    and viewed through .t().
    """

    def view(rows: int, cols: int, transposed: bool) -> Any:
        if transposed:
            return torch.randn(cols, rows, dtype=dtype, device=device).t()
        return torch.randn(rows, cols, dtype=dtype, device=device)

    return view(case.k, case.m, case.a_t), view(case.n, case.k, case.b_t)


def gemm_step(torch: Any, case: GemmCase, dtype: Any, device: str) -> Step:
    """DeepBench's GEMM in DeepBench's layout, into a preallocated C (no allocation timed)."""
    a_op, b_op = gemm_operands(torch, case, dtype, device)
    out = torch.empty(case.n, case.m, dtype=dtype, device=device)
    return lambda: torch.mm(b_op, a_op, out=out)


def conv_step(torch: Any, case: ConvCase, direction: str, dtype: Any, device: str) -> Step:
    """One pass of a 2-D convolution, NCHW; the backward passes are timed on their own, each
    from a ready output gradient, as DeepBench times cuDNN's three calls."""
    stride, padding = (case.stride_h, case.stride_w), (case.pad_h, case.pad_w)
    x = torch.randn(case.n, case.c, case.h, case.w, dtype=dtype, device=device)
    weight = torch.randn(case.k, case.c, case.r, case.s, dtype=dtype, device=device)
    if direction == "fwd":
        return lambda: torch.nn.functional.conv2d(x, weight, None, stride, padding)
    dy = torch.randn(case.n, case.k, *case.output_hw, dtype=dtype, device=device)
    # The backward op computes only the gradients its mask asks for: one pass each.
    mask = {"bwd_data": (True, False, False), "bwd_weights": (False, True, False)}.get(direction)
    if mask is not None:
        backward = torch.ops.aten.convolution_backward
        dilation, output_padding = (1, 1), (0, 0)
        return lambda: backward(
            dy, x, weight, None, stride, padding, dilation, False, output_padding, 1, mask
        )
    raise ValueError(f"no conv pass {direction!r}")


def rnn_step(torch: Any, case: RnnCase, direction: str, dtype: Any, device: str) -> Step:
    """One layer, sequence-first, input size = hidden. fwd is a training forward (autograd on,
    as cuDNN's ForwardTraining); fwd+bwd adds the gradients of the input and the weights."""
    layer_class = {"vanilla": torch.nn.RNN, "lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[case.cell]
    layer = layer_class(case.hidden, case.hidden).to(device=device, dtype=dtype)
    shape = (case.steps, case.batch, case.hidden)
    x = torch.randn(*shape, dtype=dtype, device=device, requires_grad=direction == "fwd+bwd")
    if direction == "fwd":
        return lambda: layer(x)
    if direction != "fwd+bwd":
        raise ValueError(f"no RNN pass {direction!r}")
    dy = torch.randn(*shape, dtype=dtype, device=device)
    wrt = [x, *layer.parameters()]

    def forward_backward() -> object:
        out, _ = layer(x)
        return torch.autograd.grad(out, wrt, dy)

    return forward_backward


def copy_buffers(torch: Any, case: BandwidthCase) -> tuple[Any, Any, int]:
    """Source, destination and the GPU whose stream runs the copy. Buffers are written first:
    untouched host pages all map one zero page and would read impossibly fast."""

    def host() -> Any:
        return torch.ones(case.nbytes, dtype=torch.uint8, pin_memory=case.pinned)

    def gpu(index: int) -> Any:
        return torch.ones(case.nbytes, dtype=torch.uint8, device=f"cuda:{index}")

    if case.direction == "h2d":
        return host(), gpu(0), 0
    if case.direction == "d2h":
        return gpu(0), host(), 0
    if case.direction == "d2d":
        return gpu(0), gpu(0), 0
    return gpu(case.src), gpu(case.dst), case.src


# --- timing on a GPU ------------------------------------------------------------------------------


def cuda_event_times(torch: Any, step: Step, budget: Budget) -> list[float]:
    """Per-iteration seconds between CUDA events on the current stream.

    Iterations are queued in batches without a host sync inside a batch, so each kernel starts
    as soon as the previous one ends (no launch gap inside the events). Batches double, sized
    so the loop ends near max_seconds; only the first iteration of a batch can see a launch
    gap, and the median ignores it.
    """
    warm_up(step, torch.cuda.synchronize, budget)
    times: list[float] = []
    started = time.perf_counter()
    batch = 1
    while True:
        events = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(batch)
        ]
        for begin, end in events:
            begin.record()
            step()
            end.record()
        events[-1][1].synchronize()
        times += [begin.elapsed_time(end) / 1e3 for begin, end in events]  # ms → s
        elapsed = time.perf_counter() - started
        remaining = budget.iterations - len(times)
        if remaining <= 0 or (len(times) >= MIN_TIMED and elapsed >= budget.max_seconds):
            return times
        fits = math.floor((budget.max_seconds - elapsed) * len(times) / max(elapsed, 1e-9))
        batch = max(1, min(2 * batch, remaining, max(fits, MIN_TIMED - len(times))))
