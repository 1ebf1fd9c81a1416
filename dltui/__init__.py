"""dltui: compare deep-learning servers live in a terminal."""

from __future__ import annotations

import os
import re
import sys


def version() -> str:
    """This dltui's version, or "dev" when it runs from a source tree that is not installed."""
    return installed_versions().get("dltui", "dev")


def installed_versions() -> dict[str, str]:
    """Each distribution installed where this Python finds packages (its name normalized) ->
    its version, read from its `NAME-VERSION.dist-info` (or `.egg-info`) folder's name, the
    first along `sys.path` as importlib.metadata finds it. Not importlib.metadata itself: its
    email parser would cost an agent some 4 MB of memory for a few version strings."""
    found: dict[str, str] = {}
    for folder in sys.path:
        try:
            entries = os.listdir(folder or ".")
        except OSError:
            continue
        for entry in entries:
            stem, _, suffix = entry.rpartition(".")
            name, _, rest = stem.partition("-")
            if suffix in ("dist-info", "egg-info") and rest:
                found.setdefault(normalized(name), rest.split("-")[0])
    return found


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares them: `tensorflow_cpu` is `tensorflow-cpu`."""
    return re.sub(r"[-_.]+", "-", name).lower()
