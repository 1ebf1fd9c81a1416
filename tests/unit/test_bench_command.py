"""`dltui bench kernels` turns its options into the plan the agent gets."""

from __future__ import annotations

import pytest

from dltui.cli import main
from dltui.client.scale_out import DEFAULT_RENDEZVOUS_PORT
from dltui.commands.bench import _kernel_plan, parser


def plan(*options: str):
    return _kernel_plan(parser().parse_args(["kernels", *options]))


@pytest.mark.parametrize(
    ("options", "fill"),
    [((), "deepbench"), (("--energy",), "random"), (("--fill", "random"), "random"),
     (("--energy", "--fill", "deepbench"), "deepbench")],
)  # fmt: skip
def test_inputs_are_deepbenchs_unless_energy_is_measured(options, fill):
    """Per-watt figures come from values as training sees them, unless asked otherwise."""
    assert plan(*options).fill == fill


@pytest.mark.parametrize(
    ("given", "meets_at"),
    [("gpu-01", ("gpu-01", DEFAULT_RENDEZVOUS_PORT)), ("gpu-01:29600", ("gpu-01", 29600)),
     ("[fd00::5]:29600", ("fd00::5", 29600))],
)  # fmt: skip
def test_a_rendezvous_without_a_port_takes_torchs_not_the_agents(given, meets_at):
    """The agent's own port (7070) once filled a missing one in: rank 0 then tried to listen
    where the agent on that host already does."""
    assert parser().parse_args(["models", "--rendezvous", given]).rendezvous == meets_at


def test_a_rendezvous_no_resolver_can_take_is_refused_by_its_name(capsys):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["models", "--rendezvous", "gpu01..lab"])
    assert exit_.value.code == 2
    assert "bad rendezvous address 'gpu01..lab'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("out", "why"),
    [("no/such/out.json", "no/such is not a folder"), (".", ". is a folder"),
     ("/dev/null", "/dev/null is not a regular file")],  # root would have renamed over it
)  # fmt: skip
def test_a_json_file_that_cannot_be_written_is_refused_before_anything_runs(capsys, out, why):
    """Found after the run, it lost a benchmark's results to a traceback."""
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["models", "--json", out])
    assert exit_.value.code == 2
    assert f"cannot write {out}: {why}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["kernels", "--timeout", "0"], "--timeout must be in (0, 604800], got 0.0"),
        (["kernels", "--iterations", "0"], "--iterations must be 1-100000, got 0"),
        (["kernels", "--iterations", "-5"], "--iterations must be 1-100000, got -5"),
        (["models", "--steps", "0"], "--steps must be 1-10000, got 0"),
    ],
)
def test_a_number_out_of_range_is_said_by_its_option(capsys, options, said):
    """The plan's field names (timeout_s) are a plan file's words, not the command line's; and
    0 and -5 iterations once drew two ranges that contradicted each other. The error names the
    sub-command and its help, whose options these are."""
    with pytest.raises(SystemExit) as exit_:
        main(["bench", *options])
    command = f"dltui bench {options[0]}"
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"{command}: {said}\n(see {command} --help)\n"
