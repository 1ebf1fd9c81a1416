"""What counts as danger: a GPU reading's level by its thresholds, and which events are open
(a condition up; an XID for ONCE_OPEN_S after it happened)."""

from __future__ import annotations

from dltui.fleet.health import EventBook, worst_event, worst_of
from dltui.protocol.messages import ONCE_OPEN_S, Event
from dltui.tui import danger


def reading(**values: float):
    return values.get


def test_a_gpu_readings_level_by_its_thresholds() -> None:
    assert danger.temperature(reading(temp=60.0)) == "ok"
    assert danger.temperature(reading(temp=85.0)) == "warning"
    assert danger.temperature(reading(temp=92.0)) == "critical"
    assert danger.power(reading(power=690.0, power_limit=700.0)) == "warning"
    assert danger.power(reading(power=500.0, power_limit=700.0)) == "ok"
    assert danger.power(reading(power=500.0)) == "ok"  # no limit: nothing to judge against
    assert danger.memory_errors(reading(ecc_uncorrected=1.0)) == "critical"
    assert danger.memory_errors(reading(remap_pending=1.0, retired_sbe=4.0)) == "warning"
    assert danger.throttle(reading(throttle=0x8)) == "critical"  # hardware slowdown
    assert danger.throttle(reading(throttle=0x1)) == "ok"  # idle
    assert danger.gpu_level(reading(temp=60.0, throttle=0x8, power=1.0)) == "critical"
    assert danger.gpu_level(reading()) == "ok"


def test_open_events_are_the_conditions_up_and_recent_once_events() -> None:
    book = EventBook()
    link = Event(1, "pcie_link", "warning", "x8", 100.0, gpu=5)
    xid = Event(2, "xid", "critical", "XID 79", 200.0, gpu=1, state="once")
    note = Event(3, "xid", "info", "XID 13", 210.0, gpu=0, state="once")
    for event in (link, xid, note):
        book.add(event)
    assert book.open_events(300.0) == [link, xid]  # an info event is never open
    assert worst_event(book.open_events(300.0)) == xid
    assert book.open_events(200.0 + ONCE_OPEN_S + 1) == [link]  # the XID has aged out
    book.add(Event(4, "pcie_link", "warning", "ended", 400.0, gpu=5, state="resolved"))
    assert worst_of(book.open_events(200.0 + ONCE_OPEN_S + 1)) is None
    assert book.open_events() == [xid]  # as of the newest event
