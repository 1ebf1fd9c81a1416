"""Telemetry: GPU counters through the one NVML gateway, host counters through psutil."""
