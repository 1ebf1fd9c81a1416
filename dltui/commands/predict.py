"""`dltui predict [FILE ...]`: one bigger server or more servers? Predicted images/s and
scaling efficiency for layouts of servers × GPUs, from measured results (a one-GPU training
run's step profile, all-reduce link curves) or a described server, or both."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from dltui.commands import exit_status
from dltui.commands.options import output_argument
from dltui.errors import UsageError
from dltui.formatting import fmt_gbit
from dltui.outfiles import write_text
from dltui.plans.assertions import Results
from dltui.predict.answer import NothingToPredict, answer
from dltui.predict.described import DescriptionError, model, server
from dltui.predict.model import Layout, parse_layout
from dltui.predict.whatif import DEFAULT_LAYOUTS, WhatIf
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.recording.whatif import row_cells

MAX_DESCRIPTION_BYTES = 64 * 1024

EPILOG = """\
Measured inputs: `dltui bench models --gpus 1 --json` (or a recording of it) gives the step
profile; `dltui bench kernels --kind allreduce --json` on one server gives the curve inside a
server, across two agents the curve between servers. A described server is a TOML file with
[server] (gpus, intra_gbps, network_gbit, nics, transport, efficiency, network_latency_us,
intra_latency_us, name) and [model] (name, batch, images_per_s or step_ms, params,
gradient_bytes, overlap, bucket_mb) tables, or the same values as options. Every figure is
predicted, and the lines above the table say what from.
"""


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dltui predict",
        description="Predict data-parallel training on layouts of servers × GPUs nobody "
        "measured, from measured results or a described server.",
        epilog=exit_status.epilog(
            exit_status.OK,
            exit_status.FAILED,
            exit_status.USAGE,
            exit_status.WRITE_FAILED,
            before=EPILOG,
        ),
        formatter_class=exit_status.Paragraphs,
    )
    parser.add_argument("files", nargs="*", type=Path, metavar="FILE",
                        help="dltui bench --json files and recordings")  # fmt: skip
    parser.add_argument(
        "--model", help="the profiled model to predict (where results hold several)"
    )
    default = ",".join(DEFAULT_LAYOUTS)
    parser.add_argument("--layouts", type=_layouts, metavar="SxG,SxG",
                        help=f"servers × GPUs each (default {default}; for a described "
                        "server of G GPUs 1x1,1xG,2xG,4xG,8xG,16xG,64xG)")  # fmt: skip
    parser.add_argument("--target-efficiency", type=_share, metavar="E",
                        help="also the network each layout needs to reach E (0-1) of one GPU's "
                        "images/s per GPU")  # fmt: skip
    parser.add_argument("--server", type=Path, metavar="TOML", help="a described server")
    parser.add_argument("--json", type=_json_out, metavar="OUT",
                        help="write the table as JSON ('-': stdout)")  # fmt: skip
    described = parser.add_argument_group("a described server (instead of, or over, --server)")
    for flag, kind, words in (
        ("--gpus-per-server", int, "GPUs in one server"),
        ("--intra-gbps", float, "bus bandwidth inside a server, GB/s (nccl-tests busbw)"),
        ("--network-gbit", float, "line rate of a server's NIC, Gbit/s"),
        ("--nics", int, "NICs per server"),
        ("--transport", str, "rdma or tcp"),
        ("--efficiency", float, "share of the line rate an all-reduce gets"),
        ("--network-latency-us", float, "latency of a ring step between servers, µs"),
        ("--images-per-s", float, "one GPU's images/s on the model"),
        ("--step-ms", float, "one GPU's step time, ms"),
        ("--batch", int, "images per GPU per step"),
        ("--params", float, "the model's parameters"),
        ("--gradient-bytes", float, "bytes per gradient value (4: fp32, 2: 16-bit)"),
    ):
        described.add_argument(flag, type=kind, help=words)
    described.add_argument(
        "--no-overlap", action="store_true",
        help="the framework all-reduces only after backward (TensorFlow)",
    )  # fmt: skip
    return parser


SERVER_FLAGS = {"gpus_per_server": "gpus", "intra_gbps": "intra_gbps",
                "network_gbit": "network_gbit", "nics": "nics", "transport": "transport",
                "efficiency": "efficiency", "network_latency_us": "network_latency_us"}  # fmt: skip
SPEEDS = {"images_per_s", "step_ms"}
MODEL_FLAGS = {"images_per_s": "images_per_s", "step_ms": "step_ms", "batch": "batch",
               "params": "params", "gradient_bytes": "gradient_bytes"}  # fmt: skip
OPTION_OF = {f"server.{key}": flag for flag, key in SERVER_FLAGS.items()} | {
    f"model.{key}": flag for flag, key in MODEL_FLAGS.items()
}
"""A described value's name (`model.batch`) -> the option that gives it."""


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(argv)
    kernels, models = _results(args.files)
    tables = _description(args.server)
    server_values = tables.get("server", {}) | _flags(args, SERVER_FLAGS)
    model_flags = _flags(args, MODEL_FLAGS)
    model_values = tables.get("model", {})
    if SPEEDS & model_flags.keys():  # one GPU's speed given as an option replaces the file's
        model_values = {key: value for key, value in model_values.items() if key not in SPEEDS}
    model_values |= model_flags
    if args.no_overlap:
        model_values["overlap"] = False
    described_name = model_values.get("name")
    if args.model and described_name is not None and described_name != args.model:
        raise UsageError(f"--model {args.model} and the described model.name "
                         f"{described_name!r} disagree")  # fmt: skip
    if model_values and described_name is None and args.model:
        model_values["name"] = args.model
    try:
        described_server = server(server_values) if server_values else None
        described_model = model(model_values) if model_values else None
        table = answer(kernels, models, args.model, described_server, described_model,
                       args.layouts, args.target_efficiency)  # fmt: skip
    except DescriptionError as exc:
        raise UsageError(_with_options(str(exc))) from None
    except NothingToPredict as exc:
        raise UsageError(str(exc)) from None
    if args.json == "-":
        print(json.dumps(table.to_plain(), indent=2))
        return exit_status.OK
    if args.json:
        write_text(args.json, json.dumps(table.to_plain(), indent=2) + "\n")
    print("\n".join(lines(table)))
    return exit_status.OK


def lines(table: WhatIf) -> list[str]:
    """The table as text, each figure marked predicted, with what it came from."""
    out = [f"# predicted: {table.workload.model}, batch {table.workload.batch} per GPU"]
    out += [f"# {source}" for source in table.sources]
    out += [f"# not used: {note}" for note in table.notes]
    header = ["layout", "GPUs", "step", "images/s", "eff/GPU", "eff/server", "comm wait"]
    if any(row.measured_images_per_s for row in table.rows):
        header += ["measured", "error"]
    if table.target is not None:
        header.append(f"net for {table.target:.0%}")
    rows = [header]
    for row in table.rows:
        p = row.prediction
        if p.missing:
            rows.append([str(p.layout), str(p.layout.total), p.missing])
            continue
        cells = row_cells(row)[: 9 if len(header) > 7 and header[7] == "measured" else 7]
        if table.target is not None:
            cells.append(_network(row.network_gbit))
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows if i < len(r) and len(r) > 3) for i in range(len(header))]
    for cells in rows:
        if len(cells) == 3:
            out.append(f"{cells[0]:<{widths[0]}}  {cells[1]:>{widths[1]}}  {cells[2]}")
            continue
        pairs = enumerate(zip(cells, widths, strict=True))
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in pairs))
    return out


def _network(gbit: float | None) -> str:
    if gbit is None:
        return "unreachable"
    if gbit == 0:
        return "none needed"
    return fmt_gbit(gbit)


def _results(paths: list[Path]) -> Results:
    from dltui.recording.results import results_in

    kernels: list[tuple[str, KernelResult]] = []
    models: list[tuple[str, ModelResult]] = []
    for path in paths:
        found_kernels, found_models = results_in(path)
        kernels += found_kernels
        models += found_models
    return kernels, models


def _description(path: Path | None) -> dict[str, dict[str, Any]]:
    if path is None:
        return {}
    from dltui.userfiles import FileProblem, load_toml

    try:
        document = load_toml(path, "server description", MAX_DESCRIPTION_BYTES)
    except FileProblem as exc:
        raise UsageError(str(exc)) from None
    unknown = sorted(set(document) - {"server", "model"})
    if unknown:
        raise UsageError(f"{path}: unknown table [{unknown[0]}] (known: [server], [model])")
    if not all(isinstance(table, dict) for table in document.values()):
        raise UsageError(f"{path}: [server] and [model] are tables")
    return document


def _with_options(problem: str) -> str:
    """`model.batch is …` as `model.batch (--batch) is …`: a described value comes from the
    TOML file or from its option, so a problem with it names both."""

    def both(found: re.Match[str]) -> str:
        flag = OPTION_OF.get(found.group(0))
        return f"{found.group(0)} (--{flag.replace('_', '-')})" if flag else found.group(0)

    return re.sub(r"\b(?:server|model)\.[a-z_]+", both, problem)


def _flags(args: argparse.Namespace, names: dict[str, str]) -> dict[str, Any]:
    return {key: getattr(args, flag) for flag, key in names.items()
            if getattr(args, flag) is not None}  # fmt: skip


def _layouts(text: str) -> list[Layout]:
    try:
        layouts = [parse_layout(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not layouts:
        raise argparse.ArgumentTypeError(f"no layout in {text!r}: SxG,SxG, e.g. 1x8,2x4")
    return layouts


def _json_out(text: str) -> str | Path:
    return text if text == "-" else output_argument(text)


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a share from 0 to 1, not {text!r}")
    return value
