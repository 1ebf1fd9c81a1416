"""The protocol's messages: one dataclass per frame type, its wire name in `TYPE`.

On the wire a message is a msgpack map: ``{"type": <name>, <field>: <value>, ...}``
(`dltui.protocol.wire`). Decoding checks every field against the dataclass's type hints, so a
frame that does not validate is a `ProtocolError`, never an AttributeError deep in the UI.
Unknown fields are ignored, so an agent one minor version newer can add a field without
breaking older clients. The structures the messages carry are in `inventory`, `samples`,
`bench_plans` and `bench_results`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from dltui.protocol.bench_plans import KernelPlan, ModelPlan, Plan
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.inventory import Inventory
from dltui.protocol.samples import GpuSample, HostSample

PROTOCOL_VERSION = 2  # 2: frames after a handshake with a secret are sealed

ConnectionStateName = Literal["connecting", "live", "offline", "auth_failed", "busy"]
"""busy: the agent has no room now (its clients, or connections waiting to log in); retried."""
JobState = Literal["done", "cancelled", "failed", "refused"]
Severity = Literal["info", "warning", "critical"]
EventState = Literal["raised", "resolved", "once"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "critical")
"""In rising order: `dltui record --fail-on warning` also fails on a critical event."""


@dataclass(frozen=True, slots=True)
class Message:
    TYPE: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class Hello(Message):
    """Agent → client, first frame: who I am and, when a secret is set, a challenge."""

    TYPE: ClassVar[str] = "hello"
    version: int
    agent_id: str
    hostname: str
    challenge: bytes | None = None


@dataclass(frozen=True, slots=True)
class Auth(Message):
    """Client → agent: the answer to the challenge, and a challenge for the agent."""

    TYPE: ClassVar[str] = "auth"
    version: int
    client: str
    nonce: bytes
    mac: bytes | None = None


@dataclass(frozen=True, slots=True)
class Welcome(Message):
    """Agent → client: the handshake succeeded; the inventory, and the agent's proof."""

    TYPE: ClassVar[str] = "welcome"
    agent_id: str
    inventory: Inventory
    rate_hz: float
    wall: float
    mono: float
    proof: bytes | None = None


MAX_RATE_HZ = 100.0
"""The most samples a second an agent takes, or a client may ask for."""
MAX_BATCH_S = 2.0
"""The longest a client may let its samples wait at the agent, to be sent with later ones: a
batch at MAX_RATE_HZ (200 samples) still fits in a client's queue (QUEUE_LIMIT, 256)."""


@dataclass(frozen=True, slots=True)
class Subscribe(Message):
    """Client → agent: send samples at most this often; each may wait up to `batch_s` to be
    sent together with later ones (one write, one wake of each side, instead of one a tick)."""

    TYPE: ClassVar[str] = "subscribe"
    seq: int
    rate_hz: float
    batch_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Sample(Message):
    """Agent → client: one tick of telemetry, stamped with the agent's wall and monotonic clocks."""

    TYPE: ClassVar[str] = "sample"
    seq: int
    wall: float
    mono: float
    host: HostSample
    gpus: list[GpuSample] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Ping(Message):
    TYPE: ClassVar[str] = "ping"
    seq: int
    token: int


@dataclass(frozen=True, slots=True)
class Pong(Message):
    """Agent → client: the echoed token with the agent's clocks, for RTT and clock offset."""

    TYPE: ClassVar[str] = "pong"
    token: int
    wall: float
    mono: float
    dropped: int = 0
    """Samples dropped for this client so far because it read too slowly."""


@dataclass(frozen=True, slots=True)
class ErrorMessage(Message):
    """Agent → client: what the agent refused, or why it closes the connection (a code of
    docs/protocol.md's Errors, and words). A frame, not an exception: the client turns it into
    one where it must (`AuthError`, `AgentBusy`)."""

    TYPE: ClassVar[str] = "error"
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Bye(Message):
    TYPE: ClassVar[str] = "bye"
    reason: str
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class ConnectionState(Message):
    """Made by the client, never sent by an agent: its connection to the agent changed state.

    It travels through the same path as received frames, so a recording holds the gaps. Its
    wire name, "link", is older than this class's name and stays: recordings hold it.
    """

    TYPE: ClassVar[str] = "link"
    state: ConnectionStateName
    wall: float
    detail: str | None = None
    rtt: float | None = None
    offset: float | None = None


@dataclass(frozen=True, slots=True)
class Run(Message):
    """Client → agent: start a benchmark job, kernels (`plan`) or training (`models`), exactly
    one of them. Refused before anything runs if the plan is bad."""

    TYPE: ClassVar[str] = "run"
    seq: int
    job: str
    plan: KernelPlan | None = None
    models: ModelPlan | None = None

    @classmethod
    def of(cls, seq: int, job: str, plan: Plan) -> Run:
        if isinstance(plan, ModelPlan):
            return cls(seq, job, models=plan)
        return cls(seq, job, plan=plan)

    @property
    def what(self) -> Plan | None:
        """The plan to run; None when the frame carries neither or both."""
        if (self.plan is None) == (self.models is None):
            return None
        return self.plan or self.models


@dataclass(frozen=True, slots=True)
class Cancel(Message):
    TYPE: ClassVar[str] = "cancel"
    seq: int
    job: str


@dataclass(frozen=True, slots=True)
class JobProgress(Message):
    TYPE: ClassVar[str] = "progress"
    job: str
    done: int
    """Cases finished; a frame with a new `done` starts the next case."""
    total: int
    label: str = ""
    fraction: float | None = None
    """How far the current case is (0–1), for cases long enough to say (training runs)."""


@dataclass(frozen=True, slots=True)
class JobResult(Message):
    TYPE: ClassVar[str] = "result"
    job: str
    result: KernelResult | None = None
    model: ModelResult | None = None
    """A training run's result; a frame carries this or `result`."""

    @classmethod
    def of(cls, job: str, result: KernelResult | ModelResult) -> JobResult:
        if isinstance(result, ModelResult):
            return cls(job, model=result)
        return cls(job, result=result)


@dataclass(frozen=True, slots=True)
class JobEnd(Message):
    """The job is over, exactly once per Run: refused (a bad plan, or the agent is busy: nothing
    ran), done, cancelled or failed (the worker crashed, ran out of memory or timed out)."""

    TYPE: ClassVar[str] = "job_end"
    job: str
    state: JobState
    error: str | None = None
    wall: float = 0.0


@dataclass(frozen=True, slots=True)
class Event(Message):
    """Agent → every client: the server's health changed (an XID error, a degraded PCIe link,
    retired memory, a hardware slowdown…) or an alert rule of the agent's config fired or
    resolved. Never dropped; a condition still raised is sent again to each client that logs
    in. The server is the connection it came on, as for every frame."""

    TYPE: ClassVar[str] = "event"
    id: int
    """The agent's count of events since it started: a frame sent again keeps its id."""
    kind: str
    """What happened (docs/health.md lists the kinds): "xid", "pcie_link", "alert" …"""
    severity: Severity
    detail: str
    """In words, for a person."""
    wall: float
    """Agent wall clock when it happened."""
    gpu: int | None = None
    """NVML index of the GPU it concerns; None for the host."""
    state: EventState = "raised"
    """"raised": a condition began (a degraded link, a thermal slowdown, a firing rule);
    "resolved": the condition an earlier event of the same kind, GPU and rule raised ended;
    "once": it happened, with nothing to end (an XID, a count that grew)."""
    rule: str | None = None
    """An alert's rule name."""
    value: float | None = None
    """The figure behind it: the XID code, the temperature, the count."""

    @property
    def condition(self) -> tuple[str, int | None, str | None]:
        """What a resolve matches its raise by."""
        return (self.kind, self.gpu, self.rule)

    def open_at(self, now: float) -> bool:
        """Whether it still wants attention at `now` (the agent's clock): a condition raised
        (until its resolve), or a warning or worse that happened once within ONCE_OPEN_S."""
        if self.state == "raised":
            return True
        return self.state == "once" and self.severity != "info" and now - self.wall <= ONCE_OPEN_S


ONCE_OPEN_S = 600.0
"""How long an event that happened once (an XID, an error count that grew) stays open: nothing
resolves it, and a GPU that fell off the bus ten minutes ago is still news."""


MESSAGE_TYPES: dict[str, type[Message]] = {
    cls.TYPE: cls
    for cls in (
        *(Hello, Auth, Welcome, Subscribe, Sample, Ping, Pong, ErrorMessage, Bye, ConnectionState),
        *(Run, Cancel, JobProgress, JobResult, JobEnd, Event),
    )
}
