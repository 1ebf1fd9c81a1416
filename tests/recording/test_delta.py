"""Samples as changes against the previous one: lossless on the real fixtures' samples."""

from __future__ import annotations

import math
from pathlib import Path

from dltui.protocol.messages import Sample
from dltui.protocol.wire import from_wire, to_wire
from dltui.recording.delta import apply_changes, changes, compile_shape, leaves, rebuild
from dltui.recording.reader import RecordingReader

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def samples(name: str) -> list[Sample]:
    records = RecordingReader(FIXTURES / name).read_all()
    return [r.message for r in records if isinstance(r.message, Sample)]


def test_every_real_sample_survives_leaves_changes_and_rebuild():
    for name in ("h200x2-kernels.dlrec", "cpu-kernels.dlrec"):
        found = samples(name)
        shape, values = leaves(to_wire(found[0]))
        compiled = compile_shape(to_wire(found[0]))
        stored = total = 0
        for sample in found[1:]:
            wire = to_wire(sample)
            new_shape, new_values = leaves(wire)
            assert new_shape == shape  # the same server keeps its shape
            change = changes(values, new_values)
            values = apply_changes(values, change)
            rebuilt = rebuild(compiled, values)
            assert rebuilt == wire and from_wire(rebuilt) == sample
            stored, total = stored + len(change) // 2, total + len(values)
        assert stored < total / 3  # most leaves stay the same from one sample to the next


def test_a_change_of_type_is_a_change():
    base = [1, 1.0, [1.0, 2.0], True, "ok", {}]
    assert changes(base, [1.0, 1, [1, 2.0], 1, "ok", {}]) == [0, 1.0, 1, 1, 2, [1, 2.0], 3, 1]
    assert changes(base, list(base)) == []
    assert changes([math.nan], [math.nan]) == [0, math.nan]  # NaN is never equal to itself


def test_a_shape_tells_maps_and_lists_apart():
    flat = leaves({"type": "x", "a": {"b": 1}, "c": 2})
    nested = leaves({"type": "x", "a": {"b": 1, "c": 2}})
    assert flat[1] == nested[1] and flat[0] != nested[0]
    gpus = {"type": "x", "gpus": [{"i": 0}, {"i": 1}], "empty": {}, "cores": [1.0, 2.0]}
    _, values = leaves(gpus)
    assert values == ["x", 0, 1, {}, [1.0, 2.0]] and rebuild(compile_shape(gpus), values) == gpus
