"""Numbers anyone can type, in alert rules and `--assert`: 100,000 digits that end wrong cost
no more than a short number (a backtracking pattern took 20-44 s of CPU over them)."""

from __future__ import annotations

import subprocess
import time

import pytest

from dltui.agent.alerts import RuleError, parse_rule
from dltui.plans.assertions import AssertionSyntaxError, parse_assertion
from dltui.plans.threshold import NUMBER_LIMIT
from tests.conftest import ROOT, dltui_command

DIGITS = "1" * 100_000
CPU_S = 0.5


def cpu_seconds(call) -> float:
    began = time.process_time()
    call()
    return time.process_time() - began


@pytest.mark.parametrize("tail", ["", "x", ".5.5", "e"])
def test_a_long_number_in_an_assertion_is_refused_at_once(tail):
    def parse() -> None:
        with pytest.raises(AssertionSyntaxError, match=f"at most {NUMBER_LIMIT} characters|"
                                                       "is not"):  # fmt: skip
            parse_assertion(f"tflops>={DIGITS}{tail} kind=gemm")

    assert cpu_seconds(parse) < CPU_S


@pytest.mark.parametrize("when", [f"gpu.temp > {DIGITS}x", f"gpu.temp > 90 for {DIGITS}x",
                                  f"gpu.power / gpu.power_limit >= {DIGITS}"])  # fmt: skip
def test_a_long_number_in_a_rule_is_refused_at_once(when):
    def parse() -> None:
        with pytest.raises(RuleError):
            parse_rule({"name": "hot", "when": when, "severity": "warning"})

    assert cpu_seconds(parse) < CPU_S


def test_numbers_still_parse():
    assert parse_assertion("tflops>=6.5e2 kind=gemm").threshold == 650.0
    rule = parse_rule({"name": "hot", "when": "gpu.temp >= -1.5 for 2m", "severity": "warning"})
    assert (rule.threshold, rule.seconds) == (-1.5, 120.0)
    with pytest.raises(AssertionSyntaxError, match="finite"):
        parse_assertion("tflops>=1e999")


def test_the_command_line_refuses_it_in_a_moment():
    began = time.monotonic()
    done = subprocess.run(dltui_command("bench", "kernels", "--assert", f"tflops>={DIGITS}"),
                          capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert done.returncode == 2 and f"at most {NUMBER_LIMIT} characters" in done.stderr
    assert time.monotonic() - began < 10
