"""Every file parser under hypothesis for a few seconds each (tests/fuzz/file_targets.py):
plan TOML, agent config, secret, recordings of both versions, certificate paths. Longer runs:
`python benchmarks/fuzz_files.py --seconds 600`."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.file_targets import TARGETS

EXAMPLES = 1000


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_file_parser_fails_only_in_its_own_words(name):
    target, strategies = TARGETS[name]
    run = settings(
        max_examples=EXAMPLES, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )(given(**strategies)(target))  # fmt: skip
    run()
