"""`dltui agent --config FILE`: the agent's options as a TOML file, checked before anything starts.

    listen = "0.0.0.0:7070"        # or stdio = true
    rate = 10
    secret_file = "/etc/dltui/secret"
    tls_cert = "/etc/dltui/agent.pem"
    tls_key = "/etc/dltui/agent.key"
    tls_client_ca = "/etc/dltui/clients-ca.pem"
    log_level = "info"
    nvml_timeout = 30              # then the agent goes on without GPUs
    cpu = 63                       # the agent's threads' CPU (default: the last; "any": none)
    data_dirs = ["/data/imagenet"] # folders a time-to-accuracy plan may read (default: none)
    metrics = "127.0.0.1:9470"     # Prometheus /metrics (beyond loopback: TLS or insecure)
    metrics_tls_cert = "/etc/dltui/metrics.pem"
    metrics_tls_key = "/etc/dltui/metrics.key"
    metrics_tls_client_ca = "/etc/dltui/prometheus-ca.pem"
    metrics_insecure = false       # plain HTTP beyond loopback, on purpose

    [[alert]]                      # alert rules, evaluated in the agent (agent/alerts.py)
    name = "hot"
    when = "gpu.temp > 85 for 30s"
    severity = "warning"

The keys are the command-line options' names (with `_` for `-`); an option given on the command
line wins over the file.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from dltui.agent.alerts import RuleError, parse_rules
from dltui.errors import UsageError
from dltui.protocol.address import parse_host_port
from dltui.protocol.errors import quote
from dltui.protocol.messages import MAX_RATE_HZ
from dltui.userfiles import FileProblem, listing, load_toml

LOG_LEVELS = ("debug", "info", "warning")
MAX_NVML_TIMEOUT_S = 3600.0
MAX_CONFIG_BYTES = 64 << 10
"""A config is a dozen lines; a bigger file is refused before it is parsed."""
MAX_DATA_DIRS = 64
METRICS_PORT = 9470
"""/metrics's port when `metrics` names a host alone."""
_PATHS = ("secret_file", "tls_cert", "tls_key", "tls_client_ca", "metrics_tls_cert",
          "metrics_tls_key", "metrics_tls_client_ca")  # fmt: skip
_FLAGS = ("stdio", "metrics_insecure")


class ConfigFileError(UsageError):
    """The agent's configuration is unreadable, not TOML, names something wrong, or asks for
    something unsafe or impossible (listening beyond loopback unauthenticated)."""


def load_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The file's settings as the agent parser's destinations; ConfigFileError says why not."""
    try:
        table = load_toml(path, "config", MAX_CONFIG_BYTES)
    except FileProblem as exc:
        raise ConfigFileError(str(exc)) from None
    known = {"listen", "metrics", "rate", "log_level", "nvml_timeout", "data_dirs", "alert",
             "cpu", *_PATHS, *_FLAGS}  # fmt: skip
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigFileError(
            f"config {path}: unknown keys {listing(unknown)} (known: {', '.join(sorted(known))})"
        )
    settings: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in table.items():
        try:
            settings[key] = _setting(key, value)
        except RuleError as exc:
            problems.append(f"[[alert]] {exc}")
        except ValueError as exc:
            problems.append(f"{key}: {exc}")
    if settings.get("stdio") and "listen" in settings:
        problems.append("listen and stdio = true exclude each other")
    if problems:
        raise ConfigFileError(f"config {path}: " + "; ".join(problems))
    return settings


def _setting(key: str, value: Any) -> Any:
    if key == "listen":
        return parse_host_port(_text(value))
    if key == "metrics":
        return parse_host_port(_text(value), METRICS_PORT)
    if key in _FLAGS:
        if type(value) is not bool:
            raise ValueError(f"expected true or false, got {quote(value)}")
        return value
    if key == "data_dirs":
        return data_dirs(value)
    if key == "alert":
        return parse_rules(value)
    if key == "rate":
        return in_range(value, MAX_RATE_HZ, "a number of Hz")
    if key == "nvml_timeout":
        return in_range(value, MAX_NVML_TIMEOUT_S, "seconds")
    if key == "cpu":
        return cpu_choice(value)
    if key == "log_level":
        if value not in LOG_LEVELS:
            raise ValueError(f"expected one of {', '.join(LOG_LEVELS)}, got {quote(value)}")
        return value
    return _text(value)  # a path


def cpu_choice(value: Any) -> int | Literal["any"]:
    """`cpu` (`--cpu`): a CPU's number, or "any"; a ValueError that says so otherwise."""
    if value == "any":
        return "any"
    if type(value) is not int or value < 0:
        raise ValueError(f'expected a CPU number or "any", got {quote(value)}')
    return value


def in_range(value: Any, high: float, unit: str) -> float:
    """`value` as a float in (0, high]; a ValueError that says so otherwise."""
    if type(value) not in (int, float) or not 0 < value <= high:
        raise ValueError(f"expected {unit} in (0, {high:g}], got {quote(value)}")
    return float(value)


def data_dirs(value: Any) -> tuple[str, ...]:
    """The folders time-to-accuracy plans may name: absolute paths, normalised (no `..`)."""
    if type(value) is not list or len(value) > MAX_DATA_DIRS:
        raise ValueError(f"expected a list of at most {MAX_DATA_DIRS} folders, got {quote(value)}")
    folders = []
    for item in value:
        folder = _text(item)
        if not os.path.isabs(folder) or "\0" in folder:
            raise ValueError(f"expected absolute paths, got {quote(folder)}")
        folders.append(os.path.normpath(folder))
    return tuple(folders)


def _text(value: Any) -> str:
    if type(value) is not str or not value:
        raise ValueError(f"expected a string, got {quote(value)}")
    return value
