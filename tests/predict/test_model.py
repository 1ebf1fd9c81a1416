"""The predictor's arithmetic against cases worked by hand."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from dltui.predict import links, measured, workload
from dltui.predict.links import INTER, INTRA, LinkCurve
from dltui.predict.model import (
    Fabric,
    Layout,
    allreduce_s,
    network_for,
    parse_layout,
    predict,
)
from dltui.predict.workload import AFTER_BACKWARD, MEASURED, Workload, buckets
from dltui.protocol.bench_results import KernelResult

MB = 10**6
GB = 10**9


def curve(level: str, busbw: float, alpha: float = 0.0) -> LinkCurve:
    return LinkCurve(level, alpha, busbw, "by hand")


def step(gradients: list[tuple[int, float]], step_s: float = 1.0, backward_end: float = 0.8,
         overlap: bool = True, bucket: int = 0, first: int = 0) -> Workload:  # fmt: skip
    return Workload(
        model="m", batch=10, step_s=step_s, backward_end_s=backward_end,
        gradient_bytes=tuple(size for size, _ in gradients),
        ready_s=tuple(at for _, at in gradients) if overlap else (),
        bucket_bytes=bucket, first_bucket_bytes=first, overlap=overlap,
        timing=MEASURED if overlap else AFTER_BACKWARD, source="by hand",
    )  # fmt: skip


def test_a_ring_all_reduce_moves_2_n_minus_1_over_n_of_the_message():
    link = curve(INTER, busbw=1 * GB, alpha=10e-6)
    # 8 ranks, 100 MB: 2·7/8·100 MB at 1 GB/s = 175 ms, plus 14 steps of 10 µs.
    assert link.ring(8, 100 * MB) == pytest.approx(0.175 + 14 * 10e-6)
    assert link.ring(2, 100 * MB) == pytest.approx(0.1 + 2 * 10e-6)
    assert link.ring(1, 100 * MB) == 0.0


def test_across_servers_the_all_reduce_is_reduce_scatter_ring_all_gather():
    fabric = Fabric(curve(INTRA, busbw=100 * GB), curve(INTER, busbw=10 * GB))
    size = 800 * MB
    inside = 7 / 8 * size / (100 * GB)  # each half of a ring over 8 GPUs
    across = 2 * 3 / 4 * size / (10 * GB)  # 4 servers; the 8 shards share the link
    assert allreduce_s(size, Layout(4, 8), fabric) == pytest.approx(2 * inside + across)
    assert allreduce_s(size, Layout(1, 8), fabric) == pytest.approx(2 * 7 / 8 * size / (100 * GB))
    assert allreduce_s(size, Layout(4, 1), fabric) == pytest.approx(across)


def test_a_ring_takes_the_curve_measured_across_the_most_servers_up_to_its_own():
    # Measured across 2 servers: 1 GB/s, 0.1 ms a step; across 4: 0.5 GB/s, 1 ms a step.
    two, four = curve(INTER, busbw=1 * GB, alpha=1e-4), curve(INTER, busbw=0.5 * GB, alpha=1e-3)
    fabric = Fabric(None, four, {2: two, 4: four})
    size = 100 * MB
    assert allreduce_s(size, Layout(2, 1), fabric) == pytest.approx(2 * 1e-4 + size / GB)
    # 3 servers: the 2-server curve, scaled by the ring model.
    assert allreduce_s(size, Layout(3, 1), fabric) == pytest.approx(4 * 1e-4 + 4 / 3 * size / GB)
    # 4 and 16: the 4-server curve.
    assert allreduce_s(size, Layout(4, 1), fabric) == pytest.approx(6e-3 + 1.5 * size / (GB / 2))
    assert allreduce_s(size, Layout(16, 1), fabric) == pytest.approx(four.ring(16, size))
    # Without measured rings, the one curve stands for all.
    assert allreduce_s(size, Layout(4, 1), Fabric(None, two)) == pytest.approx(two.ring(4, size))


def test_measured_curves_are_kept_per_server_count_and_chosen_by_the_layout():
    def allreduce(servers: int, floats: int, link: LinkCurve) -> KernelResult:
        return KernelResult("allreduce", "torch", "cpu", "fp32", "fwd", f"{floats}",
                            params={"ranks": servers, "servers": servers, "floats": floats},
                            median_s=link.ring(servers, floats * 4.0))  # fmt: skip

    two, four = curve(INTER, busbw=1 * GB, alpha=1e-4), curve(INTER, busbw=0.5 * GB, alpha=1e-3)
    results = [(f"host{n}", allreduce(n, floats, link))
               for n, link in ((4, four), (2, two)) for floats in (1_000, 1_000_000)]  # fmt: skip
    found = measured.gather(results, [])
    assert sorted(found.across["gloo"]) == [2, 4]
    assert found.across["gloo"][2].busbw == pytest.approx(two.busbw)
    assert found.across["gloo"][4].alpha_s == pytest.approx(four.alpha_s)
    assert found.curves[("gloo", INTER)].alpha_s == pytest.approx(four.alpha_s)  # the widest


def test_overlap_hides_all_communication_that_fits_in_backward():
    # Two 10 MB buckets ready at 0.3 s and 0.5 s, 10 ms each to all-reduce; backward ends at
    # 0.8 s: nothing is left to wait for.
    work = step([(10 * MB, 0.3), (10 * MB, 0.5)], bucket=10 * MB)
    found = predict(work, Layout(2, 1), Fabric(None, curve(INTER, busbw=1 * GB)))
    assert found.step_s == pytest.approx(1.0)
    assert found.efficiency_vs_gpu == pytest.approx(1.0)
    assert found.waiting_s == pytest.approx(0.0)
    assert found.communication_s == pytest.approx(0.02)


def test_a_bucket_larger_than_the_backward_pass_is_waited_for_after_it():
    # One 1 GB bucket ready at 0.5 s takes 1 s: the step is 0.5 + 1 + the optimizer's 0.2 s.
    work = step([(1 * GB, 0.5)], backward_end=0.8)
    found = predict(work, Layout(2, 1), Fabric(None, curve(INTER, busbw=1 * GB)))
    assert found.step_s == pytest.approx(1.7)
    assert found.images_per_s == pytest.approx(2 * 10 / 1.7)
    assert found.efficiency_vs_gpu == pytest.approx(1 / 1.7)
    assert found.waiting_share == pytest.approx(0.7 / 1.7)


def test_compute_lost_beside_an_all_reduce_delays_backward_for_the_part_it_overlaps():
    # Backward ends at 0.8 s. A 100 MB bucket ready at 0.2 s all-reduces in 0.1 s, wholly
    # beside backward, and costs it 40 ms (20 ms + 0.2 ns a byte moved: 2·1/2·100 MB). A second
    # ready at 0.8 s + 40 ms starts as backward ends: it costs nothing.
    lossy = replace(curve(INTER, busbw=1 * GB), lost_alpha_s=0.02, lost_s_per_byte=0.2e-9)
    work = step([(100 * MB, 0.2), (100 * MB, 0.8)], bucket=100 * MB)
    found = predict(work, Layout(2, 1), Fabric(None, lossy))
    assert found.step_s == pytest.approx(0.84 + 0.1 + 0.2)
    # Ready at 0.75 s, the first overlaps backward for half its 0.1 s: half the loss.
    work = step([(100 * MB, 0.75)], bucket=100 * MB)
    found = predict(work, Layout(2, 1), Fabric(None, lossy))
    assert found.step_s == pytest.approx(max(0.8 + 0.02, 0.85) + 0.2)
    # One GPU loses nothing; nor does a link whose loss was not measured.
    assert predict(work, Layout(1, 1), Fabric(None, lossy)).step_s == 1.0
    assert lossy.ring_lost(1, 100 * MB) == 0.0


def test_a_fit_draws_the_lost_compute_as_a_line_in_the_bytes_moved():
    truth = curve(INTER, busbw=1 * GB, alpha=1e-4)
    sizes = (4e3, 1e6, 16e6)
    points = [(size, truth.ring(4, size)) for size in sizes]
    lost = [(size, 0.003 + 1e-9 * 1.5 * size) for size in sizes]  # 4 ranks move 1.5 × size
    fitted = links.fit(INTER, 4, points, "exact", lost)
    assert fitted.lost_alpha_s == pytest.approx(0.003)
    assert fitted.lost_s_per_byte == pytest.approx(1e-9)
    assert fitted.ring_lost(4, 1e6) == pytest.approx(0.003 + 1.5e-3)
    assert links.fit(INTER, 4, points, "none").ring_lost(4, 1e6) == 0.0


def test_buckets_queue_one_behind_another():
    # Three 100 MB buckets ready at 0.1, 0.2, 0.3 s, 100 ms each: done at 0.2, 0.3, 0.4.
    work = step([(100 * MB, 0.1), (100 * MB, 0.2), (100 * MB, 0.3)], backward_end=0.3,
                bucket=100 * MB)  # fmt: skip
    found = predict(work, Layout(2, 1), Fabric(None, curve(INTER, busbw=1 * GB)))
    assert found.step_s == pytest.approx(0.4 + 0.7)


def test_without_overlap_every_pack_follows_the_whole_step():
    work = step([(30 * MB, 0.0), (30 * MB, 0.0), (30 * MB, 0.0)], overlap=False, bucket=50 * MB)
    assert buckets(work) == [(60 * MB, 0.8), (30 * MB, 0.8)]
    found = predict(work, Layout(2, 1), Fabric(None, curve(INTER, busbw=1 * GB, alpha=1e-3)))
    assert found.step_s == pytest.approx(1.0 + 0.06 + 0.03 + 2 * 2 * 1e-3)


def test_ddp_packs_gradients_in_ready_order_with_a_small_first_bucket():
    work = step([(MB // 2, 0.1), (MB, 0.2), (3 * MB, 0.3), (2 * MB, 0.4), (MB, 0.5)],
                bucket=4 * MB, first=MB)  # fmt: skip
    assert buckets(work) == [(MB // 2 + MB, 0.2), (5 * MB, 0.4), (MB, 0.5)]


def test_each_step_goes_at_the_slowest_ranks_pace():
    # One GPU's steps: 0.9 and 1.1 of their mean. The slower of two draws is 1.1 unless both
    # are 0.9 (one chance in four): 1.05; of three, 1.1 unless all are 0.9: 1.075.
    work = replace(step([(1, 0.5)]), step_ratios=(0.9, 1.1))
    assert work.slowest(1) == 1.0
    assert work.slowest(2) == pytest.approx(1.05)
    assert work.slowest(3) == pytest.approx(1.075)
    assert replace(work, step_ratios=()).slowest(8) == 1.0  # nothing measured: no spread
    # A link that costs nothing: two GPUs' step is the slower rank's.
    free = Fabric(curve(INTRA, busbw=1e30), None)
    assert predict(work, Layout(1, 2), free).step_s == pytest.approx(1.05)
    assert predict(work, Layout(1, 1), free).step_s == 1.0  # one GPU: the run itself


def test_one_gpu_is_the_profile_itself_and_a_missing_link_is_said():
    work = step([(10 * MB, 0.5)])
    assert predict(work, Layout(1, 1), Fabric(None, None)).step_s == 1.0
    missing = predict(work, Layout(1, 8), Fabric(None, curve(INTER, busbw=GB)))
    assert missing.images_per_s == 0.0 and "inside a server" in (missing.missing or "")


def test_the_network_for_a_target_efficiency_reaches_it():
    work = step([(1 * GB, 0.5)], backward_end=0.8)
    fabric = Fabric(None, curve(INTER, busbw=1 * GB, alpha=1e-6))
    needed = network_for(work, Layout(4, 1), fabric, 0.9)
    assert needed is not None
    # 90% of one GPU: a step of 1/0.9 s, so 0.5 + 1.5 GB/B + 0.2 = 1.111: B ≈ 3.66 GB/s.
    assert needed == pytest.approx(1.5 * GB / (1 / 0.9 - 0.7), rel=1e-3)
    # One server needs no network: it reaches the target on its own link, or never.
    assert network_for(work, Layout(1, 4), Fabric(curve(INTRA, 1000 * GB), None), 0.9) == 0.0
    assert network_for(work, Layout(1, 4), Fabric(curve(INTRA, GB), None), 0.9) is None
    # A whole step of latency: no bandwidth reaches 90%.
    slow = Fabric(None, curve(INTER, busbw=GB, alpha=1.0))
    assert network_for(work, Layout(4, 1), slow, 0.9) is None


def test_a_fit_recovers_latency_and_bandwidth_from_exact_points():
    truth = curve(INTER, busbw=3 * GB, alpha=25e-6)
    for ranks in (2, 4, 8):
        points = [(size, truth.ring(ranks, size)) for size in (4e3, 64e3, 1e6, 16e6, 64e6)]
        fitted = links.fit(INTER, ranks, points, "exact")
        assert fitted.busbw == pytest.approx(3 * GB, rel=1e-9)
        assert fitted.alpha_s == pytest.approx(25e-6, rel=1e-6)
        assert fitted.error == pytest.approx(0.0, abs=1e-9)


def test_a_fit_says_how_far_it_is_from_noisy_points():
    points = [(1e6, 0.0011), (4e6, 0.0040), (16e6, 0.0172)]
    fitted = links.fit(INTER, 2, points, "noisy")
    assert 0 < (fitted.error or 0) < 0.2
    with pytest.raises(ValueError, match="two sizes"):
        links.fit(INTER, 2, [(1e6, 0.001), (1e6, 0.0011)], "one size")
    with pytest.raises(ValueError, match="two ranks"):
        links.fit(INTER, 1, points, "one rank")


def test_a_described_workload_spreads_its_gradient_over_backward():
    work = workload.described("resnet50", 256, 0.3, 100 * MB, overlap=True)
    assert sum(work.gradient_bytes) == 100 * MB
    assert work.ready_s[0] > 0.1 and work.ready_s[-1] == pytest.approx(0.3)
    assert all(a < b for a, b in zip(work.ready_s, work.ready_s[1:], strict=False))


@pytest.mark.parametrize("text", ["2x", "x4", "0x8", "2x-1", "two by four", "2x4x1", "²x2"])
def test_a_bad_layout_is_refused(text):
    with pytest.raises(ValueError, match="layout"):
        parse_layout(text)


def test_a_layout_too_big_says_how_big_one_may_be():
    with pytest.raises(ValueError, match="at most 1,000,000 GPUs"):
        parse_layout("1000000000x8")


def test_layouts_read_both_ways():
    assert parse_layout("2x4") == parse_layout("2×4") == Layout(2, 4)
    assert str(Layout(16, 8)) == "16×8" and Layout(16, 8).total == 128
    assert math.isclose(curve(INTER, busbw=12.5e9).line_gbit, 100.0)
