"""dltui: compare deep-learning servers live in a terminal."""

from __future__ import annotations

from importlib import metadata


def version() -> str:
    """This dltui's version, or "dev" when it runs from a source tree that is not installed."""
    try:
        return metadata.version("dltui")
    except metadata.PackageNotFoundError:
        return "dev"
