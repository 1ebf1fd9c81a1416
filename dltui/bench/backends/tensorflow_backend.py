"""TensorFlow kernels: GEMM, convolution and RNN, timed with a synchronized wall clock.

Each kernel is a tf.function that returns one element of its result; reading that element back
with `.numpy()` waits for the device, which bounds the iteration. A short kernel is timed as
one compiled function that runs it many times in a loop on the device (`loop`, TensorFlow's
counterpart of a CUDA graph), so the per-call dispatch is not what gets measured. Tensors are
NHWC: TensorFlow's CPU convolution does not support NCHW, and on a GPU TensorFlow autotunes
its convolutions by default. Imported only by the worker: `import tensorflow` happens in
TensorFlowBackend().
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from dltui.bench import timing
from dltui.bench.backends import Measurement, Settings, Unsupported
from dltui.bench.shapes import Case, ConvCase, GemmCase, RnnCase

Kernel = Callable[[], Any]
"""Runs one iteration on the device and returns one element of its result, as a tensor."""
_DTYPES = {
    "fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16", "mixed": "float16",
}  # fmt: skip
# Keras' "mixed_float16" keeps fp32 weights and computes in fp16. For GEMM and convolution on a
# GPU, TensorFlow's fp16 already accumulates in fp32 (TF_FP16_*_USE_FP32_COMPUTE default on):
# there fp16 and mixed run the same kernels.
_KERAS_POLICIES = _DTYPES | {"mixed": "mixed_float16"}


class TensorFlowBackend:
    framework = "tensorflow"

    def __init__(self, device: str) -> None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before the import: it is chatty
        import tensorflow as tf

        self._tf = tf
        tf.get_logger().setLevel("ERROR")  # one tf.function per case: retracing warnings
        gpus = tf.config.list_physical_devices("GPU")
        if device == "cuda" and not gpus:
            raise RuntimeError("the plan asks for CUDA, but TensorFlow sees no GPU")
        for gpu in gpus:
            _grow_memory(tf, gpu)
        self.on_gpu = bool(gpus) and device != "cpu"
        self.device = "cuda:0" if self.on_gpu else "cpu"
        self.gpu_count = len(gpus) if self.on_gpu else 0
        self.gpu_uuids: list[str] = []  # TensorFlow does not say which GPU is which
        self._tf_device = "/GPU:0" if self.on_gpu else "/CPU:0"
        tf.random.set_seed(0)

    def time_case(self, case: Case, direction: str, settings: Settings) -> Measurement:
        """TensorFlow picks its own convolution algorithms (it autotunes on a GPU): both
        tunings run the same."""
        tf, precision, budget = self._tf, settings.precision, settings.budget
        tf.config.experimental.enable_tensor_float_32_execution(precision == "tf32")
        with tf.device(self._tf_device):
            if isinstance(case, GemmCase):
                kernel = gemm_kernel(tf, case, tf.as_dtype(_DTYPES[precision]), settings.values)
            elif isinstance(case, ConvCase):
                dtype = tf.as_dtype(_DTYPES[precision])
                kernel = conv_kernel(tf, case, direction, dtype, settings.values)
            elif isinstance(case, RnnCase):
                kernel = rnn_kernel(tf, case, direction, precision, settings.values)
            else:
                raise Unsupported(
                    f"{case.label} is measured with the torch backend (TensorFlow offers no "
                    "choice of attention kernel, nor of pinned or pageable host buffers)"
                )
            # The read-back is the device sync, so it belongs inside the timed step.
            found = timing.time_step(
                lambda: kernel().numpy(),
                timing.WallClock(),
                budget,
                capture=lambda _step, count: device_loop(tf, kernel, count),
                captured="loop",
            )
            return Measurement(found, "nhwc" if isinstance(case, ConvCase) else None)


def device_loop(tf: Any, kernel: Kernel, count: int) -> timing.Step:
    """One compiled function that runs `kernel` `count` times in a tf.while_loop and reads back
    one number: one dispatch and one sync for all of them. Each iteration adds its element to
    the loop's carried sum, so no iteration can be dropped as unused; one iteration at a time,
    as back-to-back launches run on a GPU's stream."""

    @tf.function
    def loop() -> Any:
        def body(i: Any, total: Any) -> tuple[Any, Any]:
            return i + 1, total + kernel()

        _, total = tf.while_loop(
            lambda i, _total: i < count,
            body,
            (tf.constant(0), tf.constant(0.0)),
            parallel_iterations=1,
        )
        return total

    loop().numpy()  # traces and compiles: not a timed call
    return lambda: loop().numpy()


def _grow_memory(tf: Any, gpu: Any) -> None:
    """Allocate GPU memory as needed, not all at start (the sampler and other jobs share it)."""
    try:
        tf.config.experimental.set_memory_growth(gpu, True)
    except RuntimeError:
        # TensorFlow already runs on this GPU in this process (a second plan): the setting
        # made the first time stays in force.
        return


def _first(tf: Any, tensor: Any) -> Any:
    """One element, as fp32: enough to read back, and keeps the whole result alive in the
    graph (no pass of TensorFlow's optimizer slices a MatMul or a convolution)."""
    return tf.cast(tf.reshape(tensor, [-1])[0], tf.float32)


# --- kernels: each returns a callable that runs one iteration and returns a scalar tensor --------


def values(tf: Any, shape: tuple[int, ...], dtype: Any, fill: str) -> Any:
    """A tensor of "normal" values, "uniform" ones over [0, 1), or "zeros" (Settings.values)."""
    if fill == "zeros":
        return tf.zeros(shape, dtype=dtype)
    if fill == "uniform":
        return tf.cast(tf.random.uniform(shape), dtype)  # no bf16 or fp16 uniform on every device
    return tf.random.normal(shape, dtype=dtype)


def gemm_kernel(tf: Any, case: GemmCase, dtype: Any, fill: str = "normal") -> Kernel:
    """DeepBench's column-major C(m×n) = op(A)·op(B) as the row-major Cᵀ(n×m) = op(B)ᵀ·op(A)ᵀ:
    the same memory layout, so the GPU's BLAS gets DeepBench's call (see torch_backend)."""
    b = values(tf, (case.k, case.n) if case.b_t else (case.n, case.k), dtype, fill)
    a = values(tf, (case.m, case.k) if case.a_t else (case.k, case.m), dtype, fill)

    @tf.function
    def gemm(b: Any, a: Any) -> Any:
        return _first(tf, tf.linalg.matmul(b, a, transpose_a=case.b_t, transpose_b=case.a_t))

    return lambda: gemm(b, a)


def conv_kernel(
    tf: Any, case: ConvCase, direction: str, dtype: Any, fill: str = "normal"
) -> Kernel:
    """One pass of a 2-D convolution, NHWC, through the raw ops so each backward pass runs on
    its own from a ready output gradient."""
    x = values(tf, (case.n, case.h, case.w, case.c), dtype, fill)
    filters = values(tf, (case.r, case.s, case.c, case.k), dtype, fill)
    dy = values(tf, (case.n, *case.output_hw, case.k), dtype, fill)
    geometry = {
        "strides": [1, case.stride_h, case.stride_w, 1],
        "padding": "EXPLICIT" if case.pad_h or case.pad_w else "VALID",
        "explicit_paddings": (
            [0, 0, case.pad_h, case.pad_h, case.pad_w, case.pad_w, 0, 0]
            if case.pad_h or case.pad_w
            else []
        ),
        "data_format": "NHWC",
    }
    ops = tf.raw_ops
    if direction == "fwd":

        def run(x: Any, f: Any, dy: Any) -> Any:
            return ops.Conv2D(input=x, filter=f, **geometry)

    elif direction == "bwd_data":

        def run(x: Any, f: Any, dy: Any) -> Any:
            sizes = tf.shape(x)
            return ops.Conv2DBackpropInput(input_sizes=sizes, filter=f, out_backprop=dy, **geometry)

    elif direction == "bwd_weights":

        def run(x: Any, f: Any, dy: Any) -> Any:
            sizes = tf.shape(f)
            return ops.Conv2DBackpropFilter(
                input=x, filter_sizes=sizes, out_backprop=dy, **geometry
            )

    else:
        raise ValueError(f"no conv pass {direction!r}")
    kernel = tf.function(lambda x, f, dy: _first(tf, run(x, f, dy)))
    return lambda: kernel(x, filters, dy)


def rnn_kernel(
    tf: Any, case: RnnCase, direction: str, precision: str, fill: str = "normal"
) -> Kernel:
    """One Keras layer (SimpleRNN, LSTM, GRU), input size = hidden, batch-major (Keras has no
    time-major option). fwd is a training forward; fwd+bwd adds the input and weight gradients."""
    import keras

    layer_class = {
        "vanilla": keras.layers.SimpleRNN, "lstm": keras.layers.LSTM, "gru": keras.layers.GRU,
    }  # fmt: skip
    # Glorot, not Keras' orthogonal default: that needs a QR that TensorFlow lacks for bf16.
    initializer = "zeros" if fill == "zeros" else "glorot_uniform"
    layer = layer_class[case.cell](
        case.hidden,
        return_sequences=True,
        dtype=_KERAS_POLICIES[precision],
        kernel_initializer=initializer,
        recurrent_initializer=initializer,
    )
    shape = (case.batch, case.steps, case.hidden)
    x = values(tf, shape, layer.compute_dtype, fill)
    layer.build(shape)

    if direction == "fwd":
        forward = tf.function(lambda x: _first(tf, layer(x, training=True)))
        return lambda: forward(x)
    if direction != "fwd+bwd":
        raise ValueError(f"no RNN pass {direction!r}")
    dy = values(tf, shape, layer.compute_dtype, fill)

    @tf.function
    def forward_backward(x: Any, dy: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
        grads = tape.gradient(y, [x, *layer.trainable_variables], output_gradients=dy)
        # One element of every gradient, so none of them is pruned from the graph.
        return tf.add_n([_first(tf, grad) for grad in grads])

    return lambda: forward_backward(x, dy)
