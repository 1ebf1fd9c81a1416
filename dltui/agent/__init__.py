"""The agent: samples telemetry on a server and streams it to any number of clients."""
