"""`dltui record -o FILE [AGENT ...]`: record agents' frames to a file, headless."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from dltui.client.target import Target
from dltui.commands.exit_status import JOB_EXIT
from dltui.commands.options import (
    add_connection_options,
    add_rate_option,
    reach,
    secret_option,
    target_argument,
)
from dltui.errors import UsageError
from dltui.plans.files import PlanFile, load_plan_file


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui record",
        description="Record every frame from agents to a file, headless (for cron and CI).",
    )
    parser.add_argument(
        "agents", nargs="*", type=target_argument, metavar="AGENT", help="default: local"
    )
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace FILE if it exists (a link there is "
        "replaced, never followed); without it an existing FILE is refused",
    )  # fmt: skip
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    parser.add_argument(
        "--plan", type=Path, metavar="FILE", help="a TOML plan to run while recording; stop "
        "after (its [assert] checks then decide the exit status: 5 when one fails)",
    )  # fmt: skip
    parser.add_argument(
        "--fail-on", choices=("warning", "critical"), help="stop and exit 4 as soon as an event "
        "this severe (or worse) arrives: a health problem or an agent's alert rule",
    )  # fmt: skip
    add_rate_option(parser)
    add_connection_options(parser)
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    if args.duration is not None and not args.duration > 0:
        raise UsageError("--duration must be a positive number of seconds")
    secret = secret_option(args.secret_file)
    plan = PlanFile([]) if args.plan is None else load_plan_file(args.plan)
    targets = reach(args, args.agents or [Target("local")])
    from dltui.recording.record import record

    state = asyncio.run(record(targets, args.output, args.duration, secret, args.rate,
                               plan.plans, args.fail_on, plan.assertions,
                               args.overwrite))  # fmt: skip
    return JOB_EXIT[state]
