"""The GPT-style decoders a model plan may train, as numbers: their shapes, parameter counts,
the FLOPs a token costs and how much memory a batch takes.

Shared by the engine (which builds the networks and computes MFU), the launcher (a plan's
duration) and the tests. The networks: pre-norm blocks, causal self-attention, a GELU MLP four
times as wide, no biases, learned positions, the token embedding tied to the output layer
(nanoGPT's GPT-2 with bias=False). The vocabulary is GPT-2's 50,257 padded to 50,304, a
multiple of 64, as nanoGPT pads it.
"""

from __future__ import annotations

from dataclasses import dataclass

VOCAB = 50_304


@dataclass(frozen=True, slots=True)
class GptShape:
    layers: int
    d_model: int
    heads: int
    seq: int
    """The default sequence length."""
    vocab: int = VOCAB

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


SHAPES = {
    "gpt-124m": GptShape(12, 768, 12, 2048),
    "gpt-350m": GptShape(24, 1024, 16, 2048),
    "gpt-1.3b": GptShape(24, 2048, 16, 2048),
    "gpt-tiny": GptShape(2, 64, 4, 64, vocab=64),
}
"""GPT-2 small and medium, and GPT-3 XL's shape (Brown et al.): 12×768, 24×1024, 24×2048."""

GPU_BATCH = {"gpt-124m": 32, "gpt-350m": 16, "gpt-1.3b": 16, "gpt-tiny": 64}
"""Sequences per GPU per step on an H200 (141 GB) at the default sequence length: about
65k, 33k and 33k tokens, within memory_bytes' estimate without activation checkpointing."""
CPU_BATCH = {"gpt-124m": 1, "gpt-350m": 1, "gpt-1.3b": 1, "gpt-tiny": 16}
CPU_SEQ = {"gpt-124m": 256, "gpt-350m": 256, "gpt-1.3b": 256, "gpt-tiny": 64}
"""A CPU's sequence length by default: a step of seconds, not minutes."""
LEARNING_RATE = {"gpt-124m": 6e-4, "gpt-350m": 3e-4, "gpt-1.3b": 2e-4, "gpt-tiny": 3e-3}
"""AdamW's peak rate: GPT-3's (Brown et al., table 2.1) for its sizes."""
MEMORY_HEADROOM = 0.85
"""The share of a GPU's memory a run plans to use: the allocator, CUDA's context and
torch.compile's buffers take the rest."""


RATE_WARMUP_STEPS = 10
"""Steps over which the learning rate rises linearly to its peak, as GPT training does, so
that AdamW's first steps, each as large as the rate, do not throw an untrained model's loss
up. Short: a benchmark's run is tens of steps."""


def warmup_factor(step: int) -> float:
    """The share of the peak learning rate at a step (from 0)."""
    return min(1.0, (step + 1) / RATE_WARMUP_STEPS)


def is_gpt(model: str) -> bool:
    return model in SHAPES


def parameters(shape: GptShape, seq: int | None = None) -> int:
    """Every trained parameter: per block 12·d² in its matrices and two norms' weights, the
    final norm, the tied token embedding and the position embedding (`seq` rows)."""
    d = shape.d_model
    blocks = shape.layers * (12 * d * d + 2 * d)
    return blocks + d + shape.vocab * d + (seq or shape.seq) * d


def flop_parameters(shape: GptShape) -> int:
    """N in the FLOP count: every parameter that multiplies, so not the position embedding
    (a lookup), but the tied token embedding (it is also the output layer's matrix)."""
    d = shape.d_model
    return shape.layers * (12 * d * d + 2 * d) + d + shape.vocab * d


def train_flops_per_token(shape: GptShape, seq: int) -> float:
    """6·N + 12·L·d·T: the forward and backward passes' matrix multiplies (2N + 4N) and the
    attention scores and their use (PaLM's appendix B; nanoGPT's estimate_mfu). Causal
    attention is counted whole, as both count it."""
    return 6.0 * flop_parameters(shape) + 12.0 * shape.layers * shape.d_model * seq


def memory_bytes(shape: GptShape, batch: int, seq: int, checkpoint: bool, shards: int = 1) -> float:
    """About the peak memory of one rank's training step, bf16 autocast and AdamW: 16 bytes a
    parameter (fp32 weights, gradients and two moments; over `shards` ranks under FSDP),
    activations at 34·d bytes a token and layer with fused attention (Korthikanti et al.), or
    one layer's input a layer when checkpointed, and 16 bytes a logit: bf16 and its fp32 copy,
    the fp32 log-softmax and its gradient, the bf16 gradient. (The H200's measured peaks leave
    14.4-14.7 bytes a logit beyond the other terms, docs/results/transformers-h200.md.)"""
    tokens = batch * seq
    weights = 16.0 * parameters(shape, seq) / shards
    per_layer = 2.0 * shape.d_model if checkpoint else 34.0 * shape.d_model
    activations = tokens * per_layer * shape.layers + (34.0 * shape.d_model if checkpoint else 0)
    logits = tokens * shape.vocab * 16.0
    return weights + activations + logits


def fit(
    shape: GptShape, batch: int, seq: int, gpu_memory: int, shards: int = 1
) -> tuple[int, bool]:
    """The batch and whether to checkpoint activations: the batch as given if it fits; else
    half of it, which runs at about the same rate where recomputing activations costs a third
    more compute; else the batch checkpointed; else the same again from half the batch."""
    budget = gpu_memory * MEMORY_HEADROOM

    def fits(batch: int, checkpoint: bool) -> bool:
        return memory_bytes(shape, batch, seq, checkpoint, shards) <= budget

    while batch > 1:
        for tried, checkpoint in ((batch, False), (batch // 2, False), (batch, True)):
            if fits(tried, checkpoint):
                return tried, checkpoint
        batch //= 2
    return 1, not fits(1, False)
