"""PyTorch kernels: GEMM, convolution, RNN and copy bandwidth, each timed on the device.

On a GPU a case is timed as bench/timing.py describes: CUDA graphs of back-to-back iterations
(events around launches where a step cannot be captured), and, where the plan asks for energy,
a sustained run with the GPU's energy counter read across it. Convolutions search cuDNN's
algorithms (every one, as cudnnFind does) in both memory layouts per pass and keep the
fastest, unless the plan asks for PyTorch's defaults. On a CPU the kernels are synchronous
and the wall clock times them. Imported only by the worker: `import torch` happens in
TorchBackend().
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dltui.bench import timing
from dltui.bench.backends import Measurement, Settings, Unsupported
from dltui.bench.energy import open_meter
from dltui.bench.shapes import AttentionCase, BandwidthCase, Case, ConvCase, GemmCase, RnnCase
from dltui.bench.timing import Budget, Step, Timing

_DTYPES = {
    "fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16", "mixed": "float16",
}  # fmt: skip
LAYOUTS = ("nchw", "nhwc")
RECOVER_S = 0.5
"""Idle after a sustained energy run, which leaves the GPU at its power cap: the next case
would start throttled (a 4096³ GEMM read 712 TFLOP/s after a 0.1 s rest, 781 after 0.5 s).
Before ordinary cases a rest buys nothing measurable (docs/results/kernels-h200.md)."""
SEARCH_SECONDS = 0.05
"""Each layout's (or backend's) trial in a search: a handful of 2 ms samples of device time."""
ATTENTION_BACKENDS = {
    "flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
    "math": "MATH",
}  # fmt: skip
"""scaled_dot_product_attention's implementations (torch.nn.attention.SDPBackend's names): an
attention case tries each and times the fastest, as a convolution searches its algorithms."""


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
        self.gpu_uuids = [
            str(getattr(torch.cuda.get_device_properties(index), "uuid", ""))
            for index in range(self.gpu_count)
        ]
        self._clock: timing.Clock = CudaClock(torch) if self.on_gpu else timing.WallClock()
        self._meter = open_meter(self.gpu_uuids[0]) if self.on_gpu else None
        torch.manual_seed(0)

    def time_case(self, case: Case, direction: str, settings: Settings) -> Measurement:
        if isinstance(case, BandwidthCase):
            return Measurement(self._copy_timing(case, settings.budget))
        torch, device, fill, budget = self._torch, self.device, settings.values, settings.budget
        dtype = set_precision(torch, settings.precision)
        searched = settings.tuning == "searched"
        self._set_cudnn(searched)
        if isinstance(case, AttentionCase):
            return self._attention(case, direction, dtype, budget, searched)
        if isinstance(case, ConvCase):
            layouts = LAYOUTS if searched else ("nchw",)
            steps = {
                layout: conv_step(torch, case, direction, dtype, device, layout, fill)
                for layout in layouts
            }
            layout = self._fastest(steps, budget) if len(steps) > 1 else layouts[0]
            return Measurement(self._time(steps[layout], budget), layout)
        if isinstance(case, GemmCase):
            step = gemm_step(torch, case, dtype, device, fill)
        elif isinstance(case, RnnCase):
            step = rnn_step(torch, case, direction, dtype, device, fill)
        else:
            raise Unsupported(f"the torch backend has no kernel for {case.label}")
        return Measurement(self._time(step, budget))

    def _set_cudnn(self, searched: bool) -> None:
        """Searched: cuDNN benchmarks every algorithm it has on a shape's first call and keeps
        the fastest (cudnnFind's way). Default: PyTorch's own default, the heuristic choice."""
        self._torch.backends.cudnn.benchmark = searched
        self._torch.backends.cudnn.benchmark_limit = 0  # 0: every algorithm, not the first ten

    def _time(self, step: Step, budget: Budget) -> Timing:
        capture = cuda_graph(self._torch) if self.on_gpu else None
        found = timing.time_step(step, self._clock, budget, capture, meter=self._meter)
        if found.energy is not None:
            self._clock.sync()
            time.sleep(RECOVER_S)
        return found

    def _attention(
        self, case: AttentionCase, direction: str, dtype: Any, budget: Budget, searched: bool
    ) -> Measurement:
        """Every backend that takes the case (or PyTorch's own choice, unsearched), the
        fastest timed and named. Inputs are normal values: zeros would make a softmax of
        equal weights whatever the kernel."""
        torch = self._torch
        if not searched:
            step = attention_step(torch, case, direction, dtype, self.device, None)
            return Measurement(self._time(step, budget))
        steps: dict[str, Step] = {}
        refused: list[str] = []
        for name in ATTENTION_BACKENDS:
            step = attention_step(torch, case, direction, dtype, self.device, name)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # each refusal warns why, then raises
                    step()
            except RuntimeError as exc:  # "No available kernel": this backend cannot
                refused.append(f"{name}: {str(exc).splitlines()[0][:80]}")
                continue
            steps[name] = step
        if not steps:
            raise Unsupported("no attention backend takes this case; " + "; ".join(refused))
        best = self._fastest(steps, budget) if len(steps) > 1 else next(iter(steps))
        return Measurement(self._time(steps[best], budget), backend=best)

    def _fastest(self, steps: dict[str, Step], budget: Budget) -> str:
        """The layout (or backend) whose short trials (after its own algorithm search) run
        fastest: two rounds, in turn, so a clock that drops during one trial hurts all."""
        seconds = min(budget.max_seconds, SEARCH_SECONDS)
        trial = replace(budget, iterations=1, max_seconds=seconds, sustain_s=0.0)
        capture = cuda_graph(self._torch) if self.on_gpu else None
        best: dict[str, float] = {}
        for _ in range(2):
            for layout, step in steps.items():
                found = timing.time_step(step, self._clock, trial, capture)
                median = sorted(found.samples)[len(found.samples) // 2]
                best[layout] = min(best.get(layout, median), median)
        return min(best, key=best.__getitem__)

    def _copy_timing(self, case: BandwidthCase, budget: Budget) -> Timing:
        torch = self._torch
        if case.on_host:
            src = torch.ones(case.nbytes, dtype=torch.uint8)
            dst = torch.zeros_like(src)
            return timing.time_step(lambda: dst.copy_(src), self._clock, budget)
        if not self.on_gpu:
            raise Unsupported(f"no GPU: {case.direction} copies need one")
        src, dst, stream_device = copy_buffers(torch, case)
        # A copy runs on the current stream of its source GPU (of the GPU, for host copies):
        # the events must be recorded there. Copies move bytes: no energy figure.
        with torch.cuda.device(stream_device):
            step = lambda: dst.copy_(src, non_blocking=True)  # noqa: E731
            return timing.time_step(step, self._clock, budget, cuda_graph(torch))


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


def values(torch: Any, shape: tuple[int, ...], dtype: Any, device: str, fill: str) -> Any:
    """A tensor of "normal" values, "uniform" ones over [0, 1), or "zeros" (Settings.values)."""
    if fill == "zeros":
        return torch.zeros(shape, dtype=dtype, device=device)
    if fill == "uniform":
        return torch.rand(shape, dtype=dtype, device=device)
    return torch.randn(shape, dtype=dtype, device=device)


def gemm_operands(
    torch: Any, case: GemmCase, dtype: Any, device: str, fill: str = "normal"
) -> tuple[Any, Any]:
    """op(A)ᵀ (k×m) and op(B)ᵀ (n×k) as row-major views of DeepBench's column-major buffers.

    cuBLAS is column-major: C(m×n) = op(A)·op(B). The same memory read row-major is
    Cᵀ(n×m) = op(B)ᵀ·op(A)ᵀ, so multiplying these two views hands cuBLAS exactly DeepBench's
    call (a naive row-major M×K·K×N mapping leaves leading dimensions unaligned and runs some
    shapes 3× slower; see REFERENCE.md). A transposed operand is stored the other way round
    and viewed through .t().
    """

    def view(rows: int, cols: int, transposed: bool) -> Any:
        if transposed:
            return values(torch, (cols, rows), dtype, device, fill).t()
        return values(torch, (rows, cols), dtype, device, fill)

    return view(case.k, case.m, case.a_t), view(case.n, case.k, case.b_t)


def gemm_step(torch: Any, case: GemmCase, dtype: Any, device: str, fill: str = "normal") -> Step:
    """DeepBench's GEMM in DeepBench's layout, into a preallocated C (no allocation timed)."""
    a_op, b_op = gemm_operands(torch, case, dtype, device, fill)
    out = torch.empty(case.n, case.m, dtype=dtype, device=device)
    return lambda: torch.mm(b_op, a_op, out=out)


def conv_step(
    torch: Any,
    case: ConvCase,
    direction: str,
    dtype: Any,
    device: str,
    layout: str = "nchw",
    fill: str = "normal",
) -> Step:
    """One pass of a 2-D convolution in one memory layout (NCHW, or NHWC: channels-last); the
    backward passes are timed on their own, each from a ready output gradient, as DeepBench
    times cuDNN's three calls."""
    stride, padding = (case.stride_h, case.stride_w), (case.pad_h, case.pad_w)
    memory = torch.channels_last if layout == "nhwc" else torch.contiguous_format

    def tensor(*shape: int) -> Any:
        return values(torch, shape, dtype, device, fill).to(memory_format=memory)

    x = tensor(case.n, case.c, case.h, case.w)
    weight = tensor(case.k, case.c, case.r, case.s)
    if direction == "fwd":
        return lambda: torch.nn.functional.conv2d(x, weight, None, stride, padding)
    dy = tensor(case.n, case.k, *case.output_hw)
    # The backward op computes only the gradients its mask asks for: one pass each.
    mask = {"bwd_data": (True, False, False), "bwd_weights": (False, True, False)}.get(direction)
    if mask is not None:
        backward = torch.ops.aten.convolution_backward
        dilation, output_padding = (1, 1), (0, 0)
        return lambda: backward(
            dy, x, weight, None, stride, padding, dilation, False, output_padding, 1, mask
        )
    raise ValueError(f"no conv pass {direction!r}")


def rnn_step(
    torch: Any, case: RnnCase, direction: str, dtype: Any, device: str, fill: str = "normal"
) -> Step:
    """One layer, sequence-first, input size = hidden. fwd is a training forward (autograd on,
    as cuDNN's ForwardTraining); fwd+bwd adds the gradients of the input and the weights."""
    layer_class = {"vanilla": torch.nn.RNN, "lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[case.cell]
    # Made in place, so its weights are one flat buffer as cuDNN wants them (moved with .to()
    # they are not, and every call would first copy them into one).
    layer = layer_class(case.hidden, case.hidden, device=device, dtype=dtype)
    if fill == "zeros":
        with torch.no_grad():
            for parameter in layer.parameters():
                parameter.zero_()
    shape = (case.steps, case.batch, case.hidden)
    x = values(torch, shape, dtype, device, fill).requires_grad_(direction == "fwd+bwd")
    if direction == "fwd":
        return lambda: layer(x)
    if direction != "fwd+bwd":
        raise ValueError(f"no RNN pass {direction!r}")
    dy = values(torch, shape, dtype, device, fill)
    wrt = [x, *layer.parameters()]

    def forward_backward() -> object:
        out, _ = layer(x)
        return torch.autograd.grad(out, wrt, dy)

    return forward_backward


def attention_step(
    torch: Any, case: AttentionCase, direction: str, dtype: Any, device: str, backend: str | None
) -> Step:
    """scaled_dot_product_attention on batch × heads × seq × head_dim inputs, through one
    backend (None: PyTorch's choice). fwd runs without autograd, as FlashAttention's forward
    benchmark; fwd+bwd adds the gradients of q, k and v from a ready output gradient."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    shape = (case.batch, case.heads, case.seq, case.head_dim)
    training = direction == "fwd+bwd"
    if direction not in ("fwd", "fwd+bwd"):
        raise ValueError(f"no attention pass {direction!r}")
    q, k, v = (values(torch, shape, dtype, device, "normal").requires_grad_(training)
               for _ in range(3))  # fmt: skip
    attend = torch.nn.functional.scaled_dot_product_attention

    def forward() -> Any:
        if backend is None:
            return attend(q, k, v, is_causal=case.causal)
        with sdpa_kernel([getattr(SDPBackend, ATTENTION_BACKENDS[backend])]):
            return attend(q, k, v, is_causal=case.causal)

    if not training:
        return lambda: _without_grad(torch, forward)
    dout = values(torch, shape, dtype, device, "normal")
    return lambda: torch.autograd.grad(forward(), (q, k, v), dout)


def _without_grad(torch: Any, step: Step) -> object:
    with torch.no_grad():
        return step()


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


class CudaClock:
    """CUDA events recorded on the current stream; read after a sync."""

    def __init__(self, torch: Any) -> None:
        self._torch = torch

    def now(self) -> float:
        return time.perf_counter()

    def mark(self) -> object:
        event = self._torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def seconds(self, begin: Any, end: object) -> float:
        return float(begin.elapsed_time(end)) / 1e3  # ms → s

    def sync(self) -> None:
        self._torch.cuda.synchronize()


def cuda_graph(torch: Any) -> Callable[[Step, int], Step | None]:
    """Capture `count` iterations of a step in one CUDA graph; None where the step cannot be
    captured (a host sync inside it, a pageable copy), and the caller launches it instead."""

    def capture(step: Step, count: int) -> Step | None:
        graph = torch.cuda.CUDAGraph()
        try:
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                with torch.cuda.graph(graph):
                    for _ in range(count):
                        step()
        except RuntimeError:
            torch.cuda.synchronize()
            return None
        # A step that ran outside the capture (a copy on another stream) leaves it empty:
        # replaying it would time nothing.
        if any("Graph is empty" in str(warning.message) for warning in warned):
            return None
        return graph.replay

    return capture
