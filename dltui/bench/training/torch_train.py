"""A PyTorch training rank: one process per GPU, DDP when there are several (NCCL between GPUs,
Gloo between CPU processes), SGD with momentum, autocast for 16-bit precisions, channels-last
and torch.compile where asked. A GPT model's rank trains in torch_gpt_train.py.

Synthetic data is one batch of random images made on the device and reused every step, as
tf_cnn_benchmarks does, so input never limits the figure. The steps are timed as
torch_steps.py times them; a step's time is the slowest rank's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dltui.bench.cpus import usable_cpus
from dltui.bench.models import torch_zoo
from dltui.bench.ranks import (
    Reporter,
    ShouldStop,
    across_ranks,
    backward_and_step,
    data_parallel,
    join_process_group,
)
from dltui.bench.training import TrainJob, profile
from dltui.bench.training.settings import (
    MOMENTUM,
    WEIGHT_DECAY,
    Settings,
    accuracy_result,
    resolve,
    throughput_result,
)
from dltui.bench.training.torch_gpt_train import GptTrainer
from dltui.bench.training.torch_steps import timed_steps
from dltui.plans.formulas import median
from dltui.plans.gpt import is_gpt
from dltui.plans.sizing import OVERHEAD_STEPS, PROFILED_STEPS
from dltui.protocol.bench_results import ModelResult, StepProfile


def train(
    job: TrainJob,
    report: Reporter,
    should_stop: ShouldStop,
    rank: int,
    world: int,
    master: str,
    local_rank: int,
) -> None:
    import torch
    import torch.distributed as dist

    on_gpu = job.device != "cpu" and torch.cuda.is_available()
    if job.device == "cuda" and not on_gpu:
        raise RuntimeError("PyTorch sees no CUDA GPU")
    if on_gpu:
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True  # cuDNN picks the fastest algorithm per shape
    else:
        device = torch.device("cpu")
        # The CPUs this host lets it use, shared by the ranks on this host.
        torch.set_num_threads(max(1, usable_cpus() // max(1, world // job.servers)))
    tf32 = job.precision == "tf32"  # fp32 means fp32: TF32 only when asked for
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(0)  # the same initial weights on every rank (FSDP broadcasts none)
    if world > 1:
        join_process_group(device, master, rank, world, job.timeout_s)
    try:
        result: ModelResult | None
        if is_gpt(job.model):
            result = GptTrainer(torch, job, device, rank, world, report, should_stop).throughput()
        else:
            memory = torch.cuda.get_device_properties(device).total_memory if on_gpu else None
            trainer = _Trainer(torch, job, resolve(job, memory), device, world, report,
                               should_stop)  # fmt: skip
            result = trainer.to_accuracy(rank) if job.data_dir else trainer.throughput()
        if result is not None and rank == 0:
            report.result(result)
    finally:
        if world > 1:
            dist.destroy_process_group()


class _Trainer:
    def __init__(
        self,
        torch: Any,
        job: TrainJob,
        settings: Settings,
        device: Any,
        world: int,
        report: Reporter,
        should_stop: ShouldStop,
    ) -> None:
        self.torch, self.job, self.settings, self.device = torch, job, settings, device
        self.world, self.report, self.should_stop = world, report, should_stop
        self.on_gpu = device.type == "cuda"
        self.memory_format = (
            torch.channels_last if settings.channels_last else torch.contiguous_format
        )

    def _network(
        self, classes: int
    ) -> tuple[Any, Callable[[Any, Any], Any], Callable[[Any], Callable[[Any, Any], Any]]]:
        """The model, its training step (forward under autocast, backward, SGD), and the
        same step of another wrapping of the model (what a profile times)."""
        torch, settings = self.torch, self.settings
        model = torch_zoo.build(self.job.model, classes)
        model = model.to(self.device, memory_format=self.memory_format)
        mode = self.job.compile_mode if settings.compile else None
        net = data_parallel(model, self.device, self.world, mode)
        global_batch = settings.batch * self.world
        optimizer = torch.optim.SGD(
            model.parameters(),
            lr=self.job.learning_rate * global_batch / 256,  # Goyal et al.'s linear scaling
            momentum=MOMENTUM,
            weight_decay=WEIGHT_DECAY,
            **({"fused": True} if self.on_gpu else {}),
        )
        half = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(settings.precision)
        scaler = torch.amp.GradScaler(self.device.type) if half is torch.float16 else None
        loss_of = torch.nn.functional.cross_entropy

        def step_of(target: Any) -> Callable[[Any, Any], Any]:
            def step(images: Any, labels: Any) -> Any:
                with torch.autocast(self.device.type, dtype=half, enabled=half is not None):
                    loss = loss_of(target(images), labels)
                backward_and_step(loss, optimizer, scaler)
                return loss

            return step

        return model, step_of(net), step_of

    def throughput(self) -> ModelResult | None:
        torch, job, settings = self.torch, self.job, self.settings
        model, step, step_of = self._network(job.classes)
        size = (settings.batch, 3, job.image_size, job.image_size)
        images = torch.randn(size, device=self.device).contiguous(memory_format=self.memory_format)
        labels = torch.randint(0, job.classes, (settings.batch,), device=self.device)
        times = timed_steps(
            torch, self.device, job, lambda: step(images, labels), self.report, self.should_stop
        )
        if times is None:
            return None
        times = across_ranks(times, self.device, self.world, largest=True)
        device = "cuda" if self.on_gpu else "cpu"
        result = throughput_result(
            job, settings, "torch", device, self.world, job.image_size, times
        )
        if self.world > 1:  # DDP's hooks would fire on a bare step: the one-replica run profiles
            return result
        found = self._profile(model, step_of(model), images, labels)
        if found is None:
            return result
        overhead = self._wrapper_overhead(model, step_of, images, labels)
        return replace(result, profile=replace(found, overhead=round(overhead, 6)))

    def _wrapper_overhead(self, model: Any, step_of: Callable[[Any], Callable[[Any, Any], Any]],
                          images: Any, labels: Any) -> float:  # fmt: skip
        """What DDP's own machinery adds to a step (its hooks, its bucket views, its buffers),
        as a fraction of the bare step: DDP over a group of this one rank, so nothing crosses
        a link. The bare steps come first: once wrapped, DDP's hooks on the parameters fire in
        a bare step too. On a GPU the quickest of each, by the device's clock; on a CPU the
        process's CPU time, which a CPU quota's throttling does not blur (the step is
        CPU-bound, so its time grows as its CPU time does)."""
        torch = self.torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        clock = _Clock(torch, self.on_gpu)

        def timed(step: Callable[[Any, Any], Any]) -> float:
            spent = []
            for _ in range(OVERHEAD_STEPS):
                start, cpu = clock.now(), time.process_time()
                step(images, labels)
                end = clock.now()
                clock.wait()
                spent.append(
                    clock.seconds(start, end) if self.on_gpu else time.process_time() - cpu
                )
            return min(spent) if self.on_gpu else median(spent)

        bare_s = timed(step_of(model))
        backend = "nccl" if self.on_gpu else "gloo"
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
        try:
            ids = [self.device.index] if self.on_gpu else None
            wrapped = step_of(DistributedDataParallel(model, device_ids=ids,
                                                      gradient_as_bucket_view=True))  # fmt: skip
            wrapped(images, labels)  # DDP builds its buckets on its first step
            wrapped_s = timed(wrapped)
        finally:
            dist.destroy_process_group()
        return max(0.0, wrapped_s - bare_s) / bare_s

    def _profile(self, model: Any, step: Callable[[Any, Any], Any], images: Any,
                 labels: Any) -> StepProfile | None:  # fmt: skip
        """Eager steps of the bare model with a hook on each gradient: when backward made it
        ready. Eager, since a compiled backward hands every gradient over at its end, while
        DDP's compiled graphs are split at its buckets so that they overlap as eager ones do."""
        torch = self.torch
        params = [p for p in model.parameters() if p.requires_grad]
        clock = _Clock(torch, self.on_gpu)
        marks: dict[int, Any] = {}

        def mark(key: int) -> Callable[..., None]:
            return lambda *_: marks.__setitem__(key, clock.now())

        hooks = [p.register_post_accumulate_grad_hook(mark(i)) for i, p in enumerate(params)]
        hooks.append(model.register_forward_hook(mark(-1)))
        steps = []
        try:
            step(images, labels)  # the eager kernels' first run (cuDNN's search) is not timed
            for _ in range(PROFILED_STEPS):
                marks.clear()
                start = clock.now()
                step(images, labels)
                end = clock.now()
                clock.wait()
                ready = [clock.seconds(start, marks.get(i, end)) for i in range(len(params))]
                at_end = clock.seconds(start, end)
                steps.append((clock.seconds(start, marks[-1]), max(ready), ready, at_end))
        except torch.OutOfMemoryError:  # the compiled batch may not fit eager: no profile
            return None
        finally:
            for hook in hooks:
                hook.remove()
        return profile.from_steps(
            [p.numel() * p.element_size() for p in params], steps,
            sum(p.numel() for p in params), "nccl" if self.on_gpu else "gloo",
        )  # fmt: skip

    def to_accuracy(self, rank: int) -> ModelResult | None:
        """Train on the folder, an epoch at a time, until the held-out top-1 reaches the
        target; the clock runs from the first step, evaluation included (as MLPerf counts)."""
        from dltui.bench.training import images as folder

        torch, job, settings = self.torch, self.job, self.settings
        data = folder.load(job.data_dir or "", job.image_size, job.holdout)
        model, step, _ = self._network(len(data.classes))
        train_x = torch.from_numpy(data.train_images).to(self.device)
        train_y = torch.from_numpy(data.train_labels).to(self.device)
        held_x = torch.from_numpy(data.holdout_images).to(self.device)
        held_y = torch.from_numpy(data.holdout_labels).to(self.device)
        per_step = settings.batch * self.world
        steps_per_epoch = len(train_x) // per_step
        if steps_per_epoch == 0:
            raise ValueError(
                f"{len(train_x)} training images do not fill one step of {per_step} "
                f"({self.world} × batch {settings.batch}): use a smaller --batch"
            )
        sync = torch.cuda.synchronize if self.on_gpu else (lambda: None)
        start = time.perf_counter()
        training_s, accuracy, reached = 0.0, 0.0, None
        epochs = 0
        for epoch in range(job.max_epochs):
            order = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(epoch))
            mine = order[rank :: self.world].to(self.device)
            began = time.perf_counter()
            for index in range(steps_per_epoch):
                if self.should_stop():
                    return None
                batch = mine[index * settings.batch : (index + 1) * settings.batch]
                step(self._pixels(train_x[batch]), train_y[batch])
                self.report.progress((epoch + (index + 1) / steps_per_epoch) / job.max_epochs)
            sync()
            training_s += time.perf_counter() - began
            epochs = epoch + 1
            accuracy = self._accuracy(model, held_x[rank :: self.world], held_y[rank :: self.world])
            if accuracy >= (job.target_accuracy or 1.0):
                reached = time.perf_counter() - start
                break
        return accuracy_result(
            job, settings, "torch", self.device.type, self.world, job.image_size,
            steps_per_epoch * epochs, training_s, reached, accuracy, epochs,
        )  # fmt: skip

    def _pixels(self, batch: Any) -> Any:
        """uint8 N×H×W×C to the network's input: float in [-1, 1], N×C×H×W."""
        pixels = batch.permute(0, 3, 1, 2).float().div_(127.5).sub_(1.0)
        return pixels.contiguous(memory_format=self.memory_format)

    def _accuracy(self, model: Any, images: Any, labels: Any) -> float:
        """Top-1 over the held-out images, summed over the ranks' shares."""
        torch = self.torch
        half = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(self.settings.precision)
        model.eval()
        correct = 0
        with torch.no_grad(), torch.autocast(self.device.type, dtype=half, enabled=bool(half)):
            for begin in range(0, len(images), self.settings.batch):
                chunk = slice(begin, begin + self.settings.batch)
                predicted = model(self._pixels(images[chunk])).argmax(1)
                correct += int((predicted == labels[chunk]).sum())
        model.train()
        right, total = across_ranks([float(correct), float(len(images))], self.device, self.world,
                                    largest=False)  # fmt: skip
        return right / total if total else 0.0


class _Clock:
    """Moments in a step: CUDA events on a GPU (the host runs ahead of the device), the
    wall clock on a CPU (each call returns when done)."""

    def __init__(self, torch: Any, on_gpu: bool) -> None:
        self.torch, self.on_gpu = torch, on_gpu

    def now(self) -> Any:
        if not self.on_gpu:
            return time.perf_counter()
        event = self.torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def wait(self) -> None:
        if self.on_gpu:
            self.torch.cuda.synchronize()

    def seconds(self, start: Any, moment: Any) -> float:
        return float(start.elapsed_time(moment) / 1e3 if self.on_gpu else moment - start)
