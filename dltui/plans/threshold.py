"""A number as a user writes it in an alert rule or an assertion: bounded, parsed linearly.

Rules come from an agent's config and assertions from a command line or a plan file, so a
number may be anything anyone typed: at most NUMBER_LIMIT characters, checked before any pattern
looks at it (a pattern with a choice inside a repeat, run over 100,000 digits that end wrong,
backtracks for tens of seconds), then a plain decimal, finite.
"""

from __future__ import annotations

import math
import re

from dltui.protocol.errors import quote

NUMBER_LIMIT = 32
"""Characters in one number: more than any threshold needs (-1.2345678901234567e+308 is 24)."""
NUMBER_CHARS = r"[-+0-9.eE]+"
"""What a number is made of, for a surrounding pattern: one run of one class, which cannot
backtrack into itself. `threshold` then says whether the run is a number."""
_DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def threshold(text: str) -> float:
    """The finite number `text` is; ValueError in words otherwise."""
    if len(text) > NUMBER_LIMIT:
        raise ValueError(f"a number has at most {NUMBER_LIMIT} characters, got {len(text):,}")
    if _DECIMAL.fullmatch(text) is None:
        raise ValueError(f"{quote(text)} is not a number")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number must be finite, got {text}")
    return value
