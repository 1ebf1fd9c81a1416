"""What talks to agents: targets, transports, handshake, reconnect, clock offset, campaigns and
plan runs, and the one client session that the TUI and the commands use."""
