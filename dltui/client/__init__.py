"""Connections to agents: transports, handshake, reconnect, clock offset."""
