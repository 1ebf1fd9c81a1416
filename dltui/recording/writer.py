"""Writing a recording without ever blocking the code that receives frames.

`write` only puts the message on a queue; a thread of its own encodes and compresses the
records as they come and, every `FLUSH_INTERVAL`, ends a chunk, writes it and fsyncs, so a
recorder killed with -9 (or a power cut) loses at most about that much. Every `STRETCH_S` it
starts a new stretch behind a keyframe (docs/recording-format.md), which bounds what a damaged
byte costs and what a seek has to read.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from pathlib import Path

from dltui.protocol.messages import Message
from dltui.recording.chunks import DATA, KEYFRAME, START, encode_chunk
from dltui.recording.codec import MAX_RAW, StretchEncoder
from dltui.recording.format import Header, Record, encode_header
from dltui.recording.keyframe import StateTracker, encode_keyframe

FLUSH_INTERVAL = 0.5  # seconds; well inside the one-second promise
STRETCH_S = 10.0
"""A new stretch (fresh compression, a keyframe) this often: what one damaged byte can cost at
most, and what a seek decodes beyond the two minutes it needs."""
CHUNK_RAW = MAX_RAW // 4  # a chunk ends early past this many bytes of records


class RecordingWriter:
    def __init__(self, path: str | os.PathLike[str], header: Header) -> None:
        """Create `path` (mode 0600; an existing file is never overwritten) and start writing."""
        self.path = Path(path)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._file = os.fdopen(fd, "wb")
        self._file.write(encode_header(header))
        self.bytes_written = self._file.tell()
        self.records = 0
        self._queue: queue.SimpleQueue[Record | None] = queue.SimpleQueue()
        self._tracker = StateTracker()
        self._stretch: StretchEncoder | None = None
        self._stretch_time = 0.0
        self._chunk: list[bytes] = []
        """Compressed bytes of the chunk being built; it holds at least one record."""
        self._chunk_time = 0.0
        self._chunk_kind = START
        self._latest = float("-inf")
        self._thread = threading.Thread(target=self._run, name="dltui-recorder", daemon=True)
        self._thread.start()

    def write(self, source: str, message: Message, received: float | None = None) -> None:
        """Queue one received frame; never blocks."""
        self._queue.put(Record(time.time() if received is None else received, source, message))

    def close(self) -> None:
        """Write what is queued, flush, fsync and close."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        deadline = time.monotonic() + FLUSH_INTERVAL
        done = False
        while not done:
            try:
                record = self._queue.get(timeout=max(deadline - time.monotonic(), 0.0))
                if record is None:
                    done = True
                else:
                    self._add(record)
            except queue.Empty:
                pass
            if done or time.monotonic() >= deadline:
                self._flush()
                os.fsync(self._file.fileno())
                deadline = time.monotonic() + FLUSH_INTERVAL
        self._file.close()

    def _add(self, record: Record) -> None:
        """Encode one record; a chunk ends by the records' own times too, so a file written
        faster than real time (a benchmark, a conversion) is cut as a live one is."""
        self._latest = max(self._latest, record.received)
        if self._stretch is not None:
            if self._latest - self._stretch_time >= STRETCH_S:
                self._flush()
                self._stretch = None
            elif self._latest - self._chunk_time >= FLUSH_INTERVAL or (
                self._stretch.pending >= CHUNK_RAW
            ):
                self._flush()
        if self._stretch is None:
            # The keyframe says what the state is where this stretch begins.
            self._write(KEYFRAME, encode_keyframe(self._tracker.keyframe(self._latest)))
            self._stretch = StretchEncoder()
            self._stretch_time = self._latest
            self._chunk_kind = START
        if not self._chunk:
            self._chunk_time = self._latest
        self._chunk.append(self._stretch.add(record))
        self._tracker.observe(record)
        self.records += 1

    def _flush(self) -> None:
        """End the chunk and hand it to the operating system (a kill -9 cannot lose it then);
        the stretch's stream goes on in the next chunk."""
        if self._stretch is None or not self._chunk:
            return
        self._chunk.append(self._stretch.flush())
        self._write(self._chunk_kind, b"".join(self._chunk))
        self._chunk = []
        self._chunk_kind = DATA
        self._file.flush()

    def _write(self, kind: int, payload: bytes) -> None:
        data = encode_chunk(kind, payload)
        self._file.write(data)
        self.bytes_written += len(data)
