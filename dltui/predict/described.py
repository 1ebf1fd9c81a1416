"""A server nobody here has, described as a datasheet or a paper states it: GPUs per server,
the bus bandwidth inside, the network between servers, and the model's speed on one GPU.

The description is plain values (a TOML table's, or the command line's); reading the file is
the caller's. Every number is checked here, and a problem is one line naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dltui.formatting import GB, fmt_gbit, fmt_gbps, fmt_ms
from dltui.predict import links, workload
from dltui.predict.links import LinkCurve
from dltui.predict.model import Fabric
from dltui.predict.workload import Workload

TRANSPORT_EFFICIENCY = {"rdma": 0.9, "tcp": 0.7}
"""The share of the line rate an all-reduce's bus bandwidth reaches by default: NCCL over
InfiniBand/RoCE measures ~90% of it in nccl-tests, over TCP sockets less (set `efficiency`
from your own measurements where you have them)."""
TRANSPORT_LATENCY_US = {"rdma": 5.0, "tcp": 30.0}
"""A ring step's latency between servers by default."""
INTRA_LATENCY_US = 5.0
SMALLEST = 1e-9
"""The smallest value a description takes (but zero where allowed): below it a step or a
transfer would take longer than a float holds."""

KNOWN_PARAMS = {
    "resnet20": 0.27e6, "resnet50": 25.6e6, "resnet101": 44.5e6, "resnet152": 60.2e6,
    "vgg16": 138.4e6, "vgg19": 143.7e6, "googlenet": 6.6e6, "inception3": 23.8e6,
    "inception4": 42.7e6, "alexnet": 61.1e6,
}  # fmt: skip
"""Parameters of networks papers measure, from their definitions (torchvision's and
keras.applications' counts, 1000 classes): a description that names one needs no `params`."""


class DescriptionError(ValueError):
    """A description that cannot be used as given; the message names the key."""


@dataclass(frozen=True, slots=True)
class Server:
    name: str
    gpus: int
    """GPUs per server."""
    fabric: Fabric


@dataclass(frozen=True, slots=True)
class Model:
    name: str
    batch: int
    step_s: float
    gradient_bytes: int
    overlap: bool
    bucket_bytes: int

    def workload(self, measured: Workload | None = None) -> Workload:
        """This model's step: the shape of a measured profile of the same network where there
        is one (its times scaled to this GPU's step, its gradients to this size), else assumed."""
        if measured is None or not measured.overlap or not self.overlap:
            return workload.described(self.name, self.batch, self.step_s, self.gradient_bytes,
                                      self.overlap, self.bucket_bytes)  # fmt: skip
        source = f"{measured.source}; scaled to {fmt_ms(self.step_s)} a step"
        scaled = measured.at_speed(self.step_s, self.batch, source)
        return scaled.with_gradient(self.gradient_bytes, self.bucket_bytes)


INTRA_KEYS = {"intra_latency_us"}
NETWORK_KEYS = {"nics", "transport", "efficiency", "network_latency_us"}


def server(values: dict[str, Any]) -> Server:
    """[server]: name, gpus, intra_gbps (bus bandwidth inside, GB/s), intra_latency_us,
    network_gbit (each NIC's line rate), nics, transport ("rdma" or "tcp"), efficiency,
    network_latency_us."""
    known = {"name", "gpus", "intra_gbps", "intra_latency_us", "network_gbit", "nics",
             "transport", "efficiency", "network_latency_us"}  # fmt: skip
    _only(values, known, "server")
    gpus = _int(values, "gpus", "server", 1)
    transport = values.get("transport", "rdma")
    if not isinstance(transport, str) or transport not in TRANSPORT_EFFICIENCY:
        raise DescriptionError(f"server.transport is rdma or tcp, not {transport!r}")
    for level, keys in (("intra_gbps", INTRA_KEYS), ("network_gbit", NETWORK_KEYS)):
        if level not in values and (given := sorted(keys & set(values))):
            raise DescriptionError(f"server.{given[0]} describes a link: give server.{level} too")
    intra = None
    if "intra_gbps" in values:
        gbps = _number(values, "intra_gbps", "server")
        latency = _number(values, "intra_latency_us", "server", INTRA_LATENCY_US, zero=True) * 1e-6
        intra = LinkCurve(links.INTRA, latency, gbps * GB, f"described: {fmt_gbps(gbps)} inside")
    elif gpus > 1:
        raise DescriptionError("server.intra_gbps is needed for more than one GPU a server")
    inter = None
    if "network_gbit" in values:
        rate = _number(values, "network_gbit", "server") * _int(values, "nics", "server", 1)
        efficiency = _number(values, "efficiency", "server", TRANSPORT_EFFICIENCY[transport])
        if efficiency > 1:
            raise DescriptionError("server.efficiency is a share of the line rate, at most 1")
        latency = _number(values, "network_latency_us", "server",
                          TRANSPORT_LATENCY_US[transport], zero=True)  # fmt: skip
        words = f"described: {fmt_gbit(rate)} {transport} at {efficiency:.0%}"
        inter = links.described(links.INTER, rate, efficiency, latency * 1e-6, words)
    name = str(values.get("name", f"{gpus}-GPU server"))
    return Server(name, gpus, Fabric(intra, inter))


def model(values: dict[str, Any]) -> Model:
    """[model]: name, batch (per GPU), images_per_s (one GPU's) or step_ms, params (known
    names need none), gradient_bytes (per parameter: 4 for fp32, 2 for 16-bit all-reduce),
    overlap (DDP and Horovod: true; TensorFlow's strategies: false), bucket_mb."""
    known = {"name", "batch", "images_per_s", "step_ms", "params", "gradient_bytes", "overlap",
             "bucket_mb"}  # fmt: skip
    _only(values, known, "model")
    name = str(values.get("name", "model"))
    batch = _int(values, "batch", "model")
    if ("images_per_s" in values) == ("step_ms" in values):
        raise DescriptionError("model: give one GPU's images_per_s or its step_ms, one of them")
    if "images_per_s" in values:
        step_s = batch / _number(values, "images_per_s", "model")
    else:
        step_s = _number(values, "step_ms", "model") / 1e3
    if "params" in values:
        params = _number(values, "params", "model")
    elif name.lower() in KNOWN_PARAMS:
        params = KNOWN_PARAMS[name.lower()]
    else:
        raise DescriptionError(f"model.params is needed for {name!r} (known: "
                               f"{', '.join(sorted(KNOWN_PARAMS))})")  # fmt: skip
    per_param = _number(values, "gradient_bytes", "model", 4.0)
    overlap = values.get("overlap", True)
    if not isinstance(overlap, bool):
        raise DescriptionError("model.overlap is true or false")
    bucket = _number(values, "bucket_mb", "model", 25.0) * 2**20
    gradient = round(params * per_param)
    if gradient < 1:
        raise DescriptionError(f"model.params × gradient_bytes is {params * per_param:g} bytes: "
                               "params counts parameters, not millions of them")  # fmt: skip
    return Model(name, batch, step_s, gradient, overlap, round(bucket))


def _only(values: dict[str, Any], known: set[str], table: str) -> None:
    unknown = sorted(set(values) - known)
    if unknown:
        raise DescriptionError(
            f"{table}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )


def _number(values: dict[str, Any], key: str, table: str, default: float | None = None,
            zero: bool = False) -> float:  # fmt: skip
    value = values.get(key, default)
    if value is None:
        raise DescriptionError(f"{table}.{key} is needed")
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise DescriptionError(f"{table}.{key} is a number, not {value!r}")
    if value < 0 or (value < SMALLEST and not (value == 0 and zero)) or value > 1e18:
        raise DescriptionError(f"{table}.{key} is out of range: {value!r}")
    return float(value)


def _int(values: dict[str, Any], key: str, table: str, default: int | None = None) -> int:
    value = values.get(key, default)
    if value is None:
        raise DescriptionError(f"{table}.{key} is needed")
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
        raise DescriptionError(f"{table}.{key} is a whole number from 1, not {value!r}")
    return value
