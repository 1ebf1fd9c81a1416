"""Recordings: the frames a client received, on disk, to replay, export and report."""

SUFFIX = ".dlrec"
"""The name's ending dltui gives a recording, and takes as one (a recording is known by its
magic, recording/format.py; a file of that name that lacks it is a damaged recording)."""
