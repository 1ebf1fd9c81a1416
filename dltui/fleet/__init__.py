"""In-memory state of every server, built only from protocol frames: the model the UI reads."""
