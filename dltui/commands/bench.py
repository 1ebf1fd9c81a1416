"""`dltui bench kernels|models`: the command line, the plan it means, and the table printed as
results arrive.

The same path the TUI uses: a client session carries the plan to each agent as a `run` frame,
the agent's worker runs it, results come back as frames, and a `Campaign` decides what runs
where (side by side, or one run across servers). A local run and a remote one differ only in
the address. Ctrl-C cancels every job and waits for the agents to confirm.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import signal
from collections.abc import Callable
from pathlib import Path

from dltui.client.campaign import Member, check_layout, is_across
from dltui.client.plan_run import PlanRun
from dltui.client.session import ClientSession
from dltui.client.target import Target
from dltui.commands import exit_status
from dltui.commands.bench_table import BenchTable
from dltui.commands.headless import run_plans_headless
from dltui.commands.options import (
    add_connection_options,
    apply_connection_options,
    output_argument,
    rendezvous_argument,
    secret_option,
    target_argument,
)
from dltui.outfiles import write_text
from dltui.plans import sizing
from dltui.plans.assertions import (
    Assertion,
    AssertionSyntaxError,
    Baseline,
    baseline_of,
    parse_assertion,
)
from dltui.plans.check import PlanError, check_plan
from dltui.plans.names import DEVICES
from dltui.plans.occupancy import mig_uuid
from dltui.protocol.bench_plans import KernelPlan, ModelPlan, Plan
from dltui.protocol.messages import JobState
from dltui.recording.results import results_in

CLIENT_RATE_HZ = 1.0  # the CLI prints results, not telemetry: few samples, please
STOPS = (signal.SIGINT, signal.SIGTERM)
"""Ctrl-C, and what `timeout`, CI runners and systemd stop a command with: the jobs cancelled."""
BENCH_EXITS = (
    exit_status.OK, exit_status.FAILED, exit_status.USAGE, exit_status.REFUSED, exit_status.BUSY,
    exit_status.ASSERTION_FAILED, exit_status.UNREACHABLE, exit_status.WRITE_FAILED,
    exit_status.INTERRUPTED,
)  # fmt: skip
EXIT_STATUSES = exit_status.epilog(*BENCH_EXITS)


def _names(allowed: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        names = [name.strip() for name in text.split(",") if name.strip()]
        unknown = [name for name in names if name not in allowed]
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(unknown) or 'empty list'} (choose from {', '.join(allowed)})"
            )
        return names

    return parse


def _agents_options(parser: argparse.ArgumentParser, across_help: str) -> None:
    """Where a benchmark runs: the same options for every `dltui bench` command."""
    parser.add_argument(
        "--agent",
        type=target_argument,
        action="append",
        metavar="AGENT",
        help="an agent (default: local; see 'reaching agents'); repeat it to run on several "
        "servers side by side (or, " + across_help + ", as one run across them)",
    )
    parser.add_argument(
        "--rendezvous",
        type=rendezvous_argument,
        metavar="HOST:PORT",
        help="where rank 0 waits in a run across servers (default: the first agent, port 29500)",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="cap for the whole job")
    parser.add_argument("--json", type=output_argument, metavar="OUT",
                        help="also write the results as JSON")  # fmt: skip
    parser.add_argument(
        "--force", action="store_true",
        help="run even where someone else's work is on the GPUs (the agent refuses otherwise); "
        "the results say whose work they shared the GPUs with",
    )  # fmt: skip
    parser.add_argument(
        "--assert", dest="assertions", action="append", type=_assertion, default=[],
        metavar="EXPR", help="a check every matching result must pass, e.g. 'ratio>=0.9', "
        "'tflops>=600 kind=gemm precision=bf16', 'images_per_second>=7000 model=resnet50', "
        f"'efficiency>=0.9' (repeat for more); a failure exits {exit_status.ASSERTION_FAILED}",
    )  # fmt: skip
    parser.add_argument(
        "--baseline", metavar="FILE", help="ratios against the results of this dltui bench "
        "--json file or recording instead of the published figures: the table's 'vs base' "
        "column, and --assert's 'ratio'",
    )  # fmt: skip
    add_connection_options(parser)


DEVICE_HELP = "auto (default), cuda, cpu, or cuda:MIG-<uuid>: one MIG instance (dltui probe)"


def _device(text: str) -> str:
    if text in DEVICES or mig_uuid(text):
        return text
    raise argparse.ArgumentTypeError(f"expected one of {', '.join(DEVICES)} or cuda:MIG-<uuid>, "
                                     f"got {text!r}")  # fmt: skip


def _assertion(text: str) -> Assertion:
    try:
        return parse_assertion(text)
    except AssertionSyntaxError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _kernels_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    from dltui.plans import names as plan

    parser = commands.add_parser(
        "kernels",
        help="run DeepBench kernels, print a table",
        description="Run DeepBench kernels (GEMM, convolution, RNN, bandwidth, all-reduce), "
        "attention (every backend searched) and the collectives FSDP and mixture-of-experts "
        "use (all-gather, reduce-scatter, all-to-all, broadcast) on an agent (this machine by "
        "default) and print a table as results arrive.",
        epilog=EXIT_STATUSES,
    )
    _agents_options(parser, "with --kind allreduce")
    parser.add_argument("--framework", choices=plan.FRAMEWORKS, default="torch")
    parser.add_argument("--set", dest="shape_set", choices=plan.SHAPE_SETS, default="quick")
    parser.add_argument(
        "--kind", type=_names(plan.KINDS), default=["gemm", "conv", "rnn"], metavar="K,K"
    )
    parser.add_argument(
        "--precision", type=_names(plan.PRECISIONS), default=["fp32"], metavar="P,P"
    )
    parser.add_argument("--device", type=_device, default="auto", help=DEVICE_HELP)
    parser.add_argument("--gpus", type=int, default=0, help="ranks for the collectives (0: all)")
    parser.add_argument("--iterations", type=int,
                        help="timed iterations in each of a case's three trials (default "
                        "DeepBench's)")  # fmt: skip
    parser.add_argument("--max-seconds", type=float, default=2.0, help="cap per case (default 2)")
    parser.add_argument(
        "--no-pad",
        dest="pad",
        action="store_false",
        help="time 16-bit GEMMs and convolutions exactly as stated (default: padded to "
        "multiples of 8, as DeepBench pads them)",
    )
    parser.add_argument(
        "--tuning",
        choices=plan.TUNINGS,
        default="searched",
        help="searched: the fastest algorithm and layout per pass (default); default: the "
        "framework's own choice",
    )
    parser.add_argument(
        "--fill",
        choices=plan.FILLS,
        help="the inputs' values: deepbench (the default): DeepBench's own, which its "
        "published figures and the V100 references used (zeros in 16-bit precisions); "
        "random (the default with --energy): normal values, as training sees them (a "
        "power-capped GPU clocks lower and draws more on them)",
    )
    parser.add_argument(
        "--energy",
        action="store_true",
        help="run each compute case on for 0.6 s more (up to 4 s at a power limit that swings), "
        "reading the GPU's energy counter: per-watt figures and the rate under sustained load",
    )
    return parser


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 0:
        raise argparse.ArgumentTypeError(f"expected GPU counts like 1,2,4,8 (0: all), got {text!r}")
    return counts


def _models_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    from dltui.plans import names as plan

    parser = commands.add_parser(
        "models",
        help="train CNNs or GPT models, print images/s or tokens/s",
        description="Train CNNs (ResNet-50, VGG-16, GoogLeNet, AlexNet) on synthetic "
        "ImageNet-shaped data and print images/s, or GPT-style decoders on synthetic tokens and "
        "print tokens/s and MFU: on one GPU, a scale-up sweep over GPU counts, "
        "or one run across servers. With --data and --target-accuracy, train on a folder of "
        "images until the held-out top-1 reaches the target (time to accuracy).",
        epilog=exit_status.epilog(
            *BENCH_EXITS,
            before="Defaults are the fast choices for the device: on a GPU bf16, channels-last, "
            "compiled, and each model's tuned batch; on a CPU fp32, eager, a batch that makes a "
            "step of a second or two, and fewer steps.",
        ),
        formatter_class=exit_status.Paragraphs,
    )
    _agents_options(parser, "with --scale-out")
    parser.add_argument(
        "--scale-out",
        action="store_true",
        help="one run across the --agent servers (after baselines on the first)",
    )
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="with --scale-out: skip the one-GPU and one-server baselines",
    )
    parser.add_argument("--framework", choices=plan.FRAMEWORKS, default="torch")
    parser.add_argument(
        "--model",
        type=_names(plan.MODELS),
        default=["resnet50"],
        metavar="M,M",
        help=f"models ({','.join(plan.MODELS)}); default resnet50",
    )
    parser.add_argument(
        "--gpus",
        type=_counts,
        default=None,
        metavar="N,N",
        help="GPU counts, a scale-up sweep (default 1; with --scale-out 0: all)",
    )
    parser.add_argument("--batch", type=int, help="images (GPT: sequences) per GPU per step")
    parser.add_argument(
        "--seq-len", type=int, help="GPT: tokens per sequence (default: the model's; CPU 64-256)"
    )
    parser.add_argument(
        "--parallel",
        choices=plan.PARALLELISMS,
        default="ddp",
        help="GPT over several GPUs: ddp (default) or fsdp (full sharding)",
    )
    parser.add_argument("--precision", choices=plan.MODEL_PRECISIONS)
    parser.add_argument("--channels-last", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument(
        "--compile", action=argparse.BooleanOptionalAction, default=None, help="torch.compile / XLA"
    )
    parser.add_argument(
        "--warmup", type=int, help=f"untimed steps (default 10; on a CPU {sizing.CPU_WARMUP})"
    )
    parser.add_argument(
        "--steps", type=int, help=f"timed steps (default 100; on a CPU {sizing.CPU_STEPS})"
    )
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--device", type=_device, default="auto", help=DEVICE_HELP)
    parser.add_argument(
        "--learning-rate", type=float, help="default: the model's own (CNNs: SGD at 0.1)"
    )
    parser.add_argument(
        "--data", metavar="DIR", help="a folder of images on the agent, one sub-folder per class"
    )
    parser.add_argument(
        "--target-accuracy",
        type=float,
        metavar="TOP1",
        help="held-out top-1 (0-1) that ends a --data run",
    )
    parser.add_argument("--max-epochs", type=int, default=50)
    return parser


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui bench",
        description="Run benchmarks on agents.",
        epilog=EXIT_STATUSES,
    )
    commands = parser.add_subparsers(dest="what", required=True, metavar="kernels|models")
    _kernels_parser(commands)
    _models_parser(commands)
    return parser


def _named_as_options(problems: str, options: dict[str, object]) -> str:
    """A plan's problems as the command line names what it gave: `timeout_s must be …` is
    `--timeout must be …` (a plan file says them with the plan's own names)."""

    def option(found: re.Match[str]) -> str:
        field = found.group(1)
        dest = field if field in options else field.removesuffix("_s")
        return (
            found.group(0).replace(field, "--" + dest.replace("_", "-"))
            if dest in options
            else found.group(0)
        )

    return re.sub(r"(?:^|(?<=; ))([a-z]+(?:_[a-z]+)*) must", option, problems)


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    """`dltui bench kernels|models ARGS`."""
    args = parser.parse_args(argv)
    secret = secret_option(args.secret_file)
    targets = apply_connection_options(args, args.agent or [Target("local")])
    plan: KernelPlan | ModelPlan
    if args.what == "kernels":
        plan = _kernel_plan(args)
        across = is_across(plan, len(targets))
    else:
        plan = _model_plan(args)
        across = args.scale_out
    plan = dataclasses.replace(plan, force=args.force)
    try:
        check_plan(plan)
    except PlanError as exc:
        raise PlanError(_named_as_options(str(exc), vars(args))) from None
    check_layout(plan, len(targets), across)
    baseline = None
    if args.baseline:
        baseline = baseline_of(results_in(Path(args.baseline), "baseline"), args.baseline)
    baselines = not getattr(args, "no_baseline", False)
    given = (getattr(args, "warmup", None) is not None, getattr(args, "steps", None) is not None)
    checks = (args.assertions, baseline)
    return asyncio.run(
        _bench(targets, plan, secret, args.json, across, args.rendezvous, baselines, given, checks)
    )


def _say(line: str, *, note: bool = False) -> None:
    """An assertion's line, in the table's own style (a note is a comment)."""
    print(f"# {line}" if note else line)


def _kernel_plan(args: argparse.Namespace) -> KernelPlan:
    return KernelPlan(
        framework=args.framework,
        shape_set=args.shape_set,
        kinds=args.kind,
        precisions=args.precision,
        device=args.device,
        gpus=args.gpus,
        iterations=args.iterations,
        max_seconds=args.max_seconds,
        pad=args.pad,
        tuning=args.tuning,
        # Per-watt on zeros would overstate what real values draw (1.9 TFLOP/s/W on an H200).
        fill=args.fill or ("random" if args.energy else "deepbench"),
        energy=args.energy,
        timeout_s=args.timeout,
    )


def _model_plan(args: argparse.Namespace) -> ModelPlan:
    data = str(Path(args.data).absolute()) if args.data else None
    return ModelPlan(
        framework=args.framework,
        models=args.model,
        gpus=args.gpus or [0 if args.scale_out else 1],
        batch=args.batch,
        precision=args.precision,
        channels_last=args.channels_last,
        compile=args.compile,
        warmup=10 if args.warmup is None else args.warmup,
        steps=100 if args.steps is None else args.steps,
        image_size=args.image_size,
        seq_len=args.seq_len,
        parallel=args.parallel,
        classes=args.classes,
        device=args.device,
        learning_rate=args.learning_rate,
        data_dir=data,
        target_accuracy=args.target_accuracy,
        max_epochs=args.max_epochs,
        timeout_s=args.timeout,
    )


async def _bench(
    targets: list[Target],
    plan: Plan,
    secret: bytes | None,
    json_out: Path | None,
    across: bool,
    rendezvous: tuple[str, int] | None,
    baselines: bool,
    given: tuple[bool, bool],
    checks: tuple[list[Assertion], Baseline | None],
) -> int:
    """The plan run headless, its table printed as results arrive: the exit status."""
    session = ClientSession(targets, secret, CLIENT_RATE_HZ)
    loop = asyncio.get_running_loop()
    tables: list[BenchTable] = []
    assertions, baseline = checks

    def plans() -> PlanRun:
        names = session.names()
        inventories = [welcome.inventory for welcome in session.welcomes().values()]
        sized = plan
        if isinstance(plan, ModelPlan) and all(sizing.on_cpu(plan, i) for i in inventories):
            sized = sizing.for_cpu(plan, *given)  # a CPU's step counts, unless asked for

        def name(member: Member) -> str:
            return names[member.source]

        run = PlanRun([(sized, across)], session.connections, rendezvous, baselines, name)
        table = BenchTable(run, names, baseline)
        tables.append(table)
        session.subscribe(table)
        table.start(session.welcomes())
        for stop in STOPS:
            loop.add_signal_handler(stop, table.interrupt)
        return run

    async def ended(run: PlanRun, state: JobState) -> None:
        for stop in STOPS:
            loop.remove_signal_handler(stop)
        tables[0].end(state)

    async with session:
        try:
            status = await run_plans_headless(session, plans, _say, assertions, baseline, ended)
        finally:
            for stop in STOPS:
                loop.remove_signal_handler(stop)
    if json_out is not None and tables:
        write_text(json_out, json.dumps(tables[0].report(session), indent=2) + "\n")
    return status
