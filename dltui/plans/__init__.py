"""The plan vocabulary every side shares: what a plan may name, the check that refuses a bad
one, plan files, and the math that turns times into results (FLOP counts, bandwidths,
scaling efficiency).

Pure: no framework, no I/O beyond reading a plan file. The agent, the client, the TUI and the
benchmark engine all import it; it imports only the protocol.
"""
