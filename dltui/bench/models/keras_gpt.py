"""The GPT decoder of torch_gpt.py in Keras: the same blocks (pre-norm, causal self-attention
through Keras's MultiHeadAttention, a tanh-GELU MLP four times as wide, no biases), learned
positions and the token embedding tied to the output layer, GPT-2's initialisation; logits in
float32 whatever the mixed-precision policy, for a stable softmax.
"""

from __future__ import annotations

import math
from typing import Any

from dltui.plans.gpt import GptShape


def build(shape: GptShape, seq: int) -> Any:
    import keras

    std = 0.02
    residual_std = 0.02 / math.sqrt(2 * shape.layers)

    def normal(deviation: float) -> Any:
        return keras.initializers.RandomNormal(0.0, deviation)

    def norm() -> Any:
        return keras.layers.LayerNormalization(epsilon=1e-5, center=False)

    class Block(keras.layers.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = norm(), norm()
            self.attention = keras.layers.MultiHeadAttention(
                shape.heads, shape.head_dim, use_bias=False, kernel_initializer=normal(std)
            )
            self.expand = keras.layers.Dense(4 * shape.d_model, use_bias=False,
                                             kernel_initializer=normal(std))  # fmt: skip
            self.project = keras.layers.Dense(shape.d_model, use_bias=False,
                                              kernel_initializer=normal(residual_std))  # fmt: skip

        def call(self, x: Any) -> Any:
            h = self.norm1(x)
            x = x + self.attention(h, h, use_causal_mask=True)
            h = keras.activations.gelu(self.expand(self.norm2(x)), approximate=True)
            return x + self.project(h)

    class Gpt(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = keras.layers.Embedding(shape.vocab, shape.d_model,
                                                 embeddings_initializer=normal(std))  # fmt: skip
            self.positions = keras.layers.Embedding(seq, shape.d_model,
                                                    embeddings_initializer=normal(std))  # fmt: skip
            self.blocks = [Block() for _ in range(shape.layers)]
            self.norm = norm()

        def call(self, ids: Any) -> Any:
            where = keras.ops.arange(keras.ops.shape(ids)[1])
            x = self.tokens(ids) + self.positions(where)
            for block in self.blocks:
                x = block(x)
            x = self.norm(x)
            table = keras.ops.cast(self.tokens.embeddings, x.dtype)  # tied output layer
            return keras.ops.cast(keras.ops.matmul(x, keras.ops.transpose(table)), "float32")

    model = Gpt()
    model(keras.ops.zeros((1, seq), "int32"))  # its variables now, before an optimizer sees them
    return model


def copy_task(tf: Any, batch: int, seq: int, vocab: int, period: int) -> Any:
    """torch_gpt.copy_task in TensorFlow: `period` random tokens repeated, seq + 1 a row."""
    first = tf.random.uniform((batch, period), 0, vocab, dtype=tf.int32)
    return tf.tile(first, (1, -(-(seq + 1) // period)))[:, : seq + 1]
