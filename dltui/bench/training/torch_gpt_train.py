"""A PyTorch training rank of a GPT model: bf16 autocast, torch.compile and fused AdamW on a
GPU, data-parallel with DDP or FSDP (full sharding: each block's parameters, gradients and
AdamW state split over the ranks, gathered for its forward and backward), activation
checkpointing where the batch needs it (bench/training/settings.resolve_gpt).

The tokens are the copy task of models/torch_gpt.py, drawn afresh on the device every step
(each rank its own), so the loss must fall: a broken model, or one that sees the future,
shows in the trajectory the result carries. Steps are timed as the CNN ranks time theirs
(torch_steps.py), a step as slow as the slowest rank; the losses stay on the device until the
timing is over.
"""

from __future__ import annotations

from typing import Any

from dltui.bench.models import torch_gpt
from dltui.bench.ranks import (
    Reporter,
    ShouldStop,
    across_ranks,
    backward_and_step,
    data_parallel,
)
from dltui.bench.training import TrainJob
from dltui.bench.training.settings import GptSettings, resolve_gpt, token_result
from dltui.bench.training.torch_steps import timed_steps
from dltui.plans import gpt
from dltui.protocol.bench_results import ModelResult

BETAS = (0.9, 0.95)
WEIGHT_DECAY = 0.1
"""AdamW as GPT-3 trained (Brown et al.)."""


class GptTrainer:
    def __init__(
        self,
        torch: Any,
        job: TrainJob,
        device: Any,
        rank: int,
        world: int,
        report: Reporter,
        should_stop: ShouldStop,
    ) -> None:
        self.torch, self.job, self.device = torch, job, device
        self.rank, self.world, self.report, self.should_stop = rank, world, report, should_stop
        self.on_gpu = device.type == "cuda"
        memory = torch.cuda.get_device_properties(device).total_memory if self.on_gpu else None
        self.settings: GptSettings = resolve_gpt(job, memory, world)
        self.shape = gpt.SHAPES[job.model]

    def _network(self) -> Any:
        """The model, wrapped for its replicas and compiled where asked, and its optimizer."""
        torch, settings = self.torch, self.settings
        model = torch_gpt.build(self.shape, settings.seq, settings.checkpoint).to(self.device)
        half = self._half()
        if self.world > 1 and self.job.parallel == "fsdp":
            from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

            # Parameters gathered in 16 bits, gradients reduced in 32 (torchtitan's policy).
            policy = MixedPrecisionPolicy(param_dtype=half, reduce_dtype=torch.float32)
            for block in model.blocks:
                if settings.compile:
                    block.compile()  # per block, before sharding, as torchtitan does
                fully_shard(block, mp_policy=policy)
            net = fully_shard(model, mp_policy=policy)
        else:
            mode = self.job.compile_mode if settings.compile else None
            net = data_parallel(model, self.device, self.world, mode)
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=self.job.learning_rate, betas=BETAS,
            weight_decay=WEIGHT_DECAY, **({"fused": True} if self.on_gpu else {}),
        )  # fmt: skip
        return net, optimizer

    def _half(self) -> Any:
        return {"fp16": self.torch.float16, "bf16": self.torch.bfloat16}.get(
            self.settings.precision
        )

    def throughput(self) -> ModelResult | None:
        torch, job, settings = self.torch, self.job, self.settings
        net, optimizer = self._network()
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, gpt.warmup_factor)
        half = self._half()
        scaler = torch.amp.GradScaler(self.device.type) if half is torch.float16 else None
        vocab = self.shape.vocab
        draws = torch.Generator(self.device).manual_seed(1000 + self.rank)
        period = torch_gpt.period_for(settings.seq)

        def step() -> Any:
            ids = torch_gpt.copy_task(torch, settings.batch, settings.seq, vocab, period,
                                      self.device, draws)  # fmt: skip
            with torch.autocast(self.device.type, dtype=half, enabled=half is not None):
                logits = net(ids[:, :-1])
            loss = torch.nn.functional.cross_entropy(
                logits.float().reshape(-1, vocab), ids[:, 1:].reshape(-1)
            )
            backward_and_step(loss, optimizer, scaler)
            schedule.step()
            return loss.detach()

        losses: list[Any] = []
        times = timed_steps(
            torch, self.device, job, lambda: losses.append(step()), self.report, self.should_stop
        )
        if times is None:
            return None
        times = across_ranks(times, self.device, self.world, largest=True)
        peak_memory = None
        if self.on_gpu:
            peak_memory = int(
                across_ranks(
                    [float(torch.cuda.max_memory_allocated(self.device))],
                    self.device,
                    self.world,
                    largest=True,
                )[0]
            )
        name = torch.cuda.get_device_name(self.device) if self.on_gpu else None
        device = "cuda" if self.on_gpu else "cpu"
        trajectory = torch.stack(losses).float().tolist()
        return token_result(
            job, settings, "torch", device, self.world, times, trajectory, name, peak_memory
        )
