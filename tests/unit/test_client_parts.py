from __future__ import annotations

import re

import pytest

from dltui.client.clock import ClockEstimator
from dltui.client.target import DEFAULT_PORT, Target, parse_target


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("local", Target("local")),
        ("gpu-01:7071", Target("tcp", "gpu-01", 7071)),
        ("gpu-01", Target("tcp", "gpu-01", DEFAULT_PORT)),
        ("127.0.0.1:1", Target("tcp", "127.0.0.1", 1)),
        ("[::1]:9000", Target("tcp", "::1", 9000)),
        ("gpu-01.lab.:7070", Target("tcp", "gpu-01.lab.", 7070)),  # the root's dot
        ("node_3", Target("tcp", "node_3", DEFAULT_PORT)),  # an ssh_config alias may have one
        ("x" * 63 + ".lab", Target("tcp", "x" * 63 + ".lab", DEFAULT_PORT)),
    ],
)
def test_parse_target(text, target):
    assert parse_target(text) == target
    assert parse_target(target.label) == target


@pytest.mark.parametrize(
    "text",
    ["", ":80", "h:0", "h:70000", "h:x", "::1:80", "[::1", "[::1]x", "a..b", "-oProxy", "a.-b:1",
     "x" * 64 + ".lab", ".", "h:", "[::1]:", "h:²"],
)  # fmt: skip
def test_parse_target_rejects(text):
    with pytest.raises(ValueError, match="bad agent address"):
        parse_target(text)


@pytest.mark.parametrize(
    ("text", "why"),
    [("h:", "no port after ':'"), ("[::1]:", "no port after ':'"), ("h:²", "port must be 1-65535"),
     ("h:0", "port must be 1-65535"), ("h:65536", "port must be 1-65535")],
)  # fmt: skip
def test_a_bad_port_is_said_plainly(text, why):
    """An empty port once meant 7070 without a word, and '²' leaked int()'s own message."""
    with pytest.raises(ValueError, match=f"bad agent address '{re.escape(text)}': {why}$"):
        parse_target(text)


def test_clock_offset_uses_the_fastest_exchange():
    clock = ClockEstimator()
    assert clock.offset is None and clock.rtt is None
    # Agent 30 s ahead; a slow exchange skews its midpoint, a fast one does not.
    clock.add(sent_wall=100.0, rtt=0.400, agent_wall=130.0 + 0.350)
    clock.add(sent_wall=101.0, rtt=0.002, agent_wall=131.0 + 0.001)
    clock.add(sent_wall=102.0, rtt=0.300, agent_wall=132.0 + 0.050)
    assert clock.offset == pytest.approx(30.0, abs=1e-9)
    assert clock.rtt == pytest.approx(0.300)
