"""How fast the agent samples: its consumers' rates, a scraper's from its gaps, never past
--rate, slowly when nobody looks."""

from __future__ import annotations

from dltui.agent.demand import IDLE_HZ, SamplingDemand


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def demand(max_hz: float = 10.0) -> tuple[SamplingDemand, list[float], Clock]:
    applied: list[float] = []
    clock = Clock()
    return SamplingDemand(max_hz, applied.append, clock), applied, clock


def scrape_every(wanted: SamplingDemand, clock: Clock, seconds: float, times: int) -> None:
    for _ in range(times):
        clock.now += seconds
        wanted.scraped()


def test_clients_set_the_rate_up_to_the_agents_own():
    wanted, applied, _ = demand(max_hz=10.0)
    assert wanted.rate_hz == IDLE_HZ and applied == []
    wanted.subscribe("a", 2.0)
    wanted.subscribe("b", 50.0)  # more than --rate: --rate
    assert applied == [2.0, 10.0] and wanted.clients == 2
    wanted.subscribe("b", None)
    wanted.subscribe("a", None)
    assert applied == [2.0, 10.0, 2.0, IDLE_HZ] and wanted.clients == 0


def test_a_scraper_sets_the_rate_from_its_gaps_and_its_jitter_moves_nothing():
    wanted, applied, clock = demand()
    wanted.scraped()  # one scrape says no rate yet
    assert applied == []
    for gap in (1.0, 1.04, 0.97, 1.1, 0.95):
        scrape_every(wanted, clock, gap, 1)
    assert applied == [1.0]
    scrape_every(wanted, clock, 15.0, 4)  # a 15 s scraper: no faster than idle
    assert wanted.rate_hz == IDLE_HZ


def test_a_scraper_that_stops_is_forgotten_on_the_next_sample():
    wanted, applied, clock = demand()
    scrape_every(wanted, clock, 0.5, 4)
    assert wanted.rate_hz == 2.0
    clock.now += 1.4  # fewer than three missed scrapes
    wanted.check()
    assert wanted.rate_hz == 2.0
    clock.now += 0.2
    wanted.check()
    assert wanted.rate_hz == IDLE_HZ and applied == [2.0, IDLE_HZ]


def test_the_fastest_consumer_wins():
    wanted, _, clock = demand()
    wanted.subscribe("tui", 0.5)
    scrape_every(wanted, clock, 1.0, 3)
    assert wanted.rate_hz == 1.0
    wanted.subscribe("recorder", 5.0)
    assert wanted.rate_hz == 5.0


def test_samples_wait_only_as_long_as_every_client_allows():
    wanted, _, _ = demand()
    assert wanted.batch_s == 0.0
    wanted.subscribe("tui", 10.0, 0.5)
    assert wanted.batch_s == 0.5
    wanted.subscribe("recorder", 10.0, 2.0)
    assert wanted.batch_s == 0.5
    wanted.subscribe("script", 1.0)  # a client that says nothing waits for nothing
    assert wanted.batch_s == 0.0
    wanted.subscribe("script", None)
    wanted.subscribe("tui", None)
    assert wanted.batch_s == 2.0
    wanted.subscribe("recorder", None)
    assert wanted.batch_s == 0.0
