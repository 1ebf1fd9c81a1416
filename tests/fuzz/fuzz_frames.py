"""Coverage-guided fuzzing of the wire decoder and the recording reader with atheris.

Not part of `make test` (atheris is not a dependency: it builds against libFuzzer). Run by hand:

    python -m venv /tmp/fuzz && /tmp/fuzz/bin/pip install atheris -e .
    /tmp/fuzz/bin/python tests/fuzz/fuzz_frames.py -max_total_time=60        # the wire
    /tmp/fuzz/bin/python tests/fuzz/fuzz_frames.py --recording -max_total_time=60

Any exception but the project's own (ProtocolError from the decoder; RecordingError for a file
that is no recording) is a finding: atheris stops and writes the input to crash-*. The file
parsers (plans, configs, secrets, recordings, certificate paths) have hypothesis targets beside
this one (file_targets.py), run by the suite and by benchmarks/fuzz_files.py.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from dltui.protocol.errors import ProtocolError
    from dltui.protocol.framing import FrameDecoder
    from dltui.protocol.wire import from_wire
    from dltui.recording.format import (
        Header,
        RecordDecoder,
        RecordingError,
        decode_header,
        encode_header,
    )

HEADER = encode_header(Header("fuzz", 0.0, {"a": "b"}))


def fuzz_wire(data: bytes) -> None:
    provider = atheris.FuzzedDataProvider(data)
    pieces = provider.ConsumeIntInRange(1, 8)
    payload = provider.ConsumeBytes(len(data))
    decoder = FrameDecoder()
    step = max(1, len(payload) // pieces)
    try:
        for start in range(0, len(payload), step):
            for obj in decoder.feed(payload[start : start + step]):
                from_wire(obj)
    except ProtocolError:
        pass


def fuzz_recording(data: bytes) -> None:
    # Half the inputs get a valid header, so the fuzzer spends its time on the records.
    if data[:1] == b"\x00":
        data = HEADER + data[1:]
    try:
        _, _, offset = decode_header(data)
    except RecordingError:
        return
    decoder = RecordDecoder(offset)
    decoder.feed(data[offset:])
    decoder.finish()


def main() -> None:
    target = fuzz_wire
    if "--recording" in sys.argv:
        sys.argv.remove("--recording")
        target = fuzz_recording
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
