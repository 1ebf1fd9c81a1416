"""Two agents in network namespaces, each a host with an address of its own (tests/netns.py)."""

from __future__ import annotations

import pytest

from tests.netns import Cluster


@pytest.fixture
def cluster(tmp_path, secret_file):
    cluster = Cluster(2, tmp_path / "cluster")
    try:
        cluster.start_agents("--secret-file", str(secret_file))
        yield cluster
    finally:
        cluster.down()
