"""Writing a recording without ever blocking the code that receives frames.

`write` only puts the message on a queue; a thread of its own encodes, appends and flushes to
the operating system at least every `FLUSH_INTERVAL` (so a recorder killed with -9 loses at
most that much), and fsyncs as often, so a power cut loses no more.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from pathlib import Path

from dltui.protocol.messages import Message
from dltui.recording.format import Header, Record, encode_header, encode_record

FLUSH_INTERVAL = 0.25  # seconds; well inside the one-second promise


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
        last_sync = time.monotonic()
        done = False
        while not done:
            try:
                batch = [self._queue.get(timeout=FLUSH_INTERVAL)]
            except queue.Empty:
                batch = []
            while True:  # take whatever else is waiting, without waiting
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            done = None in batch
            chunks = [encode_record(record) for record in batch if record is not None]
            if chunks:
                data = b"".join(chunks)
                self._file.write(data)
                self.bytes_written += len(data)
                self.records += len(chunks)
                self._file.flush()
            if done or time.monotonic() - last_sync >= FLUSH_INTERVAL:
                os.fsync(self._file.fileno())
                last_sync = time.monotonic()
        self._file.close()
