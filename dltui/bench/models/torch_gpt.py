"""A GPT-style decoder in PyTorch, as plans/gpt.py describes it: pre-norm blocks, causal
self-attention through scaled_dot_product_attention (so PyTorch picks FlashAttention, cuDNN's
or the memory-efficient kernel on a GPU), a GELU MLP four times as wide, no biases, learned
positions, the token embedding tied to the output layer; GPT-2's initialisation.

`checkpoint` recomputes each block's activations in the backward pass instead of keeping
them: what a batch too big for the GPU's memory needs (plans/gpt.fit decides).
"""

from __future__ import annotations

import math
from typing import Any

from dltui.plans.gpt import GptShape


def build(shape: GptShape, seq: int, checkpoint: bool = False) -> Any:
    import torch
    import torch.nn as nn
    import torch.nn.functional as functional
    from torch.utils.checkpoint import checkpoint as recompute

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(shape.d_model, 3 * shape.d_model, bias=False)
            self.out = nn.Linear(shape.d_model, shape.d_model, bias=False)

        def forward(self, x: Any) -> Any:
            batch, tokens, width = x.shape
            q, k, v = self.qkv(x).view(batch, tokens, 3, shape.heads, shape.head_dim).unbind(2)
            y = functional.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
            )
            return self.out(y.transpose(1, 2).reshape(batch, tokens, width))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1 = nn.LayerNorm(shape.d_model, bias=False)
            self.attention = Attention()
            self.norm2 = nn.LayerNorm(shape.d_model, bias=False)
            self.mlp = nn.Sequential(
                nn.Linear(shape.d_model, 4 * shape.d_model, bias=False),
                nn.GELU(approximate="tanh"),
                nn.Linear(4 * shape.d_model, shape.d_model, bias=False),
            )

        def forward(self, x: Any) -> Any:
            x = x + self.attention(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class Gpt(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = nn.Embedding(shape.vocab, shape.d_model)
            self.positions = nn.Embedding(seq, shape.d_model)
            self.blocks = nn.ModuleList(Block() for _ in range(shape.layers))
            self.norm = nn.LayerNorm(shape.d_model, bias=False)

        def forward(self, ids: Any) -> Any:
            where = torch.arange(ids.shape[1], device=ids.device)
            x = self.tokens(ids) + self.positions(where)
            for block in self.blocks:
                x = recompute(block, x, use_reentrant=False) if checkpoint else block(x)
            return functional.linear(self.norm(x), self.tokens.weight)  # tied output layer

    model = Gpt()
    for name, parameter in model.named_parameters():
        if parameter.dim() < 2:
            continue  # the norms' weights stay ones
        # GPT-2: N(0, 0.02), the residual projections scaled down by √(2L).
        residual = name.endswith("attention.out.weight") or name.endswith("mlp.2.weight")
        std = 0.02 / math.sqrt(2 * shape.layers) if residual else 0.02
        nn.init.normal_(parameter, 0.0, std)
    return model


def copy_task(
    torch: Any, batch: int, seq: int, vocab: int, period: int, device: Any, draws: Any = None
) -> Any:
    """Synthetic tokens a model can learn only through attention: `period` random tokens,
    repeated to fill the sequence. After the first period every next token is the one a period
    back, so the loss falls from ln(vocab) towards ln(vocab)·period/seq; a model that cannot
    attend (or attends to the future) does not learn it the same way. seq + 1 tokens a row:
    the inputs and, one along, the targets. `draws`: a torch.Generator on `device`."""
    first = torch.randint(0, vocab, (batch, period), device=device, generator=draws)
    return first.repeat(1, -(-(seq + 1) // period))[:, : seq + 1]


def period_for(seq: int) -> int:
    """The copy task's period: an eighth of the sequence, at least 2."""
    return max(2, seq // 8)
