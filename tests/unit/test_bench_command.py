"""`dltui bench kernels` turns its options into the plan the agent gets."""

from __future__ import annotations

import pytest

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
