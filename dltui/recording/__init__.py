"""Recordings: the frames a client received, on disk, to replay, export and report."""
