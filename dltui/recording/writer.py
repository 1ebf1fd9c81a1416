"""Writing a recording without ever blocking the code that receives frames.

`write` only puts the message on a queue; a thread of its own encodes and compresses the
records as they come and, every `FLUSH_INTERVAL`, ends a chunk, writes it and fsyncs, so a
recorder killed with -9 (or a power cut) loses at most about that much. Every `STRETCH_S` it
starts a new stretch behind a keyframe (docs/recording-format.md), which bounds what a damaged
byte costs and what a seek has to read.

A write that fails (a full disk, a file system gone read-only, a file size limit) stops the
recording: the file is cut back to its last whole chunk where the file system allows, so it
reads to the end with no damage, `failure` says in one line what it holds, `on_failure` is
told, and what arrives after is dropped rather than queued.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
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
    def __init__(
        self,
        path: str | os.PathLike[str],
        header: Header,
        on_failure: Callable[[str], object] | None = None,
    ) -> None:
        """Create `path` (mode 0600; an existing file, or a link, is never written through)
        and start writing; OSError if it cannot be created. `on_failure` gets the `failure`
        line, from the writer's thread, if a write fails later."""
        self.path = Path(path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        self._fd = os.open(self.path, flags, 0o600)
        try:
            self._write_out(encode_header(header))
        except OSError:
            os.close(self._fd)
            self.path.unlink(missing_ok=True)  # a file without even its header is no recording
            raise
        self.bytes_written = os.lseek(self._fd, 0, os.SEEK_CUR)
        """Bytes handed to the file system: the header and every whole chunk."""
        self.records = 0
        """Records in those chunks."""
        self.written_until: float | None = None
        """Receive time of the last record in those chunks."""
        self.failure: str | None = None
        """Set when a write failed: the recording stopped; what the file holds, in words."""
        self._on_failure = on_failure
        self._pending = 0  # records encoded into the chunk being built
        self._synced = 0  # bytes_written at the last fsync
        self._chunk_latest = 0.0  # and the latest receive time among them
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
        """Queue one received frame; never blocks. Dropped once the recording has failed."""
        if self.failure is None:
            self._queue.put(Record(time.time() if received is None else received, source, message))

    def close(self) -> None:
        """Write what is queued, flush, fsync and close."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        try:
            self._write_until_closed()
        except OSError as exc:
            self._fail(exc)
            while self._queue.get() is not None:  # what came meanwhile: dropped, not held
                pass
        else:
            os.close(self._fd)

    def _write_until_closed(self) -> None:
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
                if self.bytes_written != self._synced:  # nothing new: nothing to sync
                    os.fsync(self._fd)
                    self._synced = self.bytes_written
                deadline = time.monotonic() + FLUSH_INTERVAL

    def _fail(self, exc: OSError) -> None:
        """Stop: cut the file back to its last whole chunk (a full disk allows that; a file
        system gone read-only does not, and the reader then drops the torn tail), say what it
        holds, and close it."""
        try:
            os.ftruncate(self._fd, self.bytes_written)
        except OSError:
            pass  # the reader reads every whole chunk before a torn one
        finally:
            os.close(self._fd)
        if self.written_until is None:
            held = "no frames"
        else:
            until = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.written_until))
            held = f"{self.records} frames up to {until}"
        why = exc.strerror or str(exc)
        self.failure = (
            f"recording to {self.path} stopped: {why}; the file holds {held} "
            f"({self.bytes_written:,} bytes)"
        )
        if self._on_failure is not None:
            self._on_failure(self.failure)

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
        self._pending += 1
        self._chunk_latest = self._latest

    def _flush(self) -> None:
        """End the chunk and hand it to the operating system (a kill -9 cannot lose it then);
        the stretch's stream goes on in the next chunk."""
        if self._stretch is None or not self._chunk:
            return
        self._chunk.append(self._stretch.flush())
        self._write(self._chunk_kind, b"".join(self._chunk))
        self._chunk = []
        self._chunk_kind = DATA
        self.records += self._pending
        self._pending = 0
        self.written_until = self._chunk_latest

    def _write(self, kind: int, payload: bytes) -> None:
        data = encode_chunk(kind, payload)
        self._write_out(data)
        self.bytes_written += len(data)

    def _write_out(self, data: bytes) -> None:
        """All of `data`, or OSError (a write may take part of it: a disk that fills mid-way)."""
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
