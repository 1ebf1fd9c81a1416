"""The wire protocol: pure, no I/O. Framing, typed messages, authentication."""
