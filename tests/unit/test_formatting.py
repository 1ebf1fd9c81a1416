"""How numbers and results are written for people (dltui/formatting.py, result_text.py), with
values worked by hand: one space before a unit, memory in GiB with one decimal, ratios to 2-3
significant figures, counts grouped, and result columns whose decimal points line up."""

from __future__ import annotations

from dltui.formatting import (
    SHORT,
    aligned,
    counted,
    exact_bytes,
    fmt_bytes,
    fmt_count,
    fmt_duration,
    fmt_gbit,
    fmt_gbps,
    fmt_iterations,
    fmt_memory,
    fmt_memory_of,
    fmt_ms,
    fmt_rate,
    fmt_ratio,
    fmt_short,
    fmt_value,
    gbps_figure,
    gib_figure,
    plain_figure,
    rough_duration,
    significant,
)
from dltui.plans.scaling import Scaling
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.result_text import (
    format_model_row,
    format_row,
    kernel_header,
    method_text,
    model_header,
    rate_text,
    vs_base_text,
)

GIB = 2**30


def test_units_have_one_space_and_memory_is_gib_with_one_decimal():
    assert fmt_value(691.2, "W") == "691 W"
    assert fmt_value(30.4, "°C") == "30 °C"
    assert fmt_value(1980, "MHz") == "1980 MHz"
    assert fmt_value(97.4, "%") == "97%"
    assert fmt_value(0.6 * GIB, "B") == "0.6 GiB"  # never "1/140G"
    assert fmt_value(141 * GIB, "B") == "141.0 GiB"
    assert fmt_value(12345, "") == "12,345"
    assert fmt_value(1.4, "") == "1.40"
    assert fmt_value(None, "W") == "–" and fmt_value(float("nan"), "%") == "–"
    assert fmt_memory(0.64 * GIB) == "0.6 GiB"
    assert fmt_memory_of(0.6 * GIB, 140 * GIB) == "0.6/140.0 GiB"
    assert fmt_memory_of(3 * GIB, None) == "3.0 GiB"
    assert fmt_bytes(512) == "512 B" and fmt_bytes(1536) == "1.5 KiB"
    assert fmt_rate(55.3e9) == "55.3 GB/s" and fmt_rate(0) == "0 B/s"


def test_column_figures_leave_the_unit_to_the_heading():
    assert gib_figure(0.64 * GIB) == "0.6" and gib_figure(141 * GIB) == "141.0"
    rates = [0.0, 5.04e9, 9.94e9, 9.96e9, 63e9, 450e9]
    assert [gbps_figure(rate) for rate in rates] == ["0.0", "5.0", "9.9", "10", "63", "450"]
    assert gib_figure(None) == gbps_figure(None) == "–"


def test_short_values_fit_a_chart_label():
    cases = [(150754820096, "B", "140 GiB"), (0.6 * GIB, "B", "0.6 GiB"),
             (5.04e9, "B/s", "5.0 GB/s"), (450e9, "B/s", "450 GB/s"), (999.7e6, "B/s", "1.0 GB/s"),
             (1980, "MHz", "1980 MHz"), (61, "°C", "61 °C"), (612.4, "W", "612 W"),
             (0.0, "B/s", "0 B/s"), (None, "%", "–"), (90.4, "%", "90%")]  # fmt: skip
    for value, unit, words in cases:
        assert fmt_short(value, unit) == words
        assert len(words) <= SHORT


def test_ratios_have_two_or_three_significant_figures():
    assert fmt_ratio(18625.0) == "18,600×"  # not "18625.00×"
    assert fmt_ratio(2.3449) == "2.34×"
    assert fmt_ratio(7.666) == "7.67×"
    assert fmt_ratio(18.62) == "18.6×"
    assert fmt_ratio(0.00462) == "0.0046×"  # not "0.00×"
    assert fmt_ratio(0.843) == "0.84×"
    assert fmt_ratio(None) == ""
    assert significant(1234.5, 4) == "1,234" and significant(0.0345, 3) == "0.0345"
    assert fmt_count(1234567) == "1,234,567"


def test_a_size_as_set_and_links_in_one_unit_whatever_their_size():
    assert exact_bytes(16 << 20) == "16 MiB" and exact_bytes(8 << 30) == "8 GiB"
    assert exact_bytes(3 << 19) == "1572864 B"  # 1.5 MiB is no whole number of MiB
    # A link in GB/s or Gbit/s even where it is slow, so two links read side by side; no
    # trailing zeros, no exponent, whole from 100 up.
    assert fmt_gbps(0.0117) == "0.0117 GB/s" and fmt_gbps(25.0) == "25 GB/s"
    assert fmt_gbps(1600) == "1,600 GB/s" and fmt_gbps(0.00005) == "0.00005 GB/s"
    assert fmt_gbit(0.1) == "0.1 Gbit/s" and fmt_gbit(400) == "400 Gbit/s"
    assert fmt_ms(0.03772) == "37.7 ms" and fmt_ms(4.8432) == "4,843 ms"
    assert plain_figure(99.96) == "100" and plain_figure(-2.5) == "-2.5"


def test_durations_are_never_zero_seconds():
    assert fmt_duration(0.0042) == "4.2 ms"
    assert fmt_duration(0.0000231) == "23.1 µs"
    assert fmt_duration(0.04) == "40.0 ms"  # a 40 ms case: not "0.0 s"
    assert fmt_duration(90) == "90.0 s"
    assert rough_duration(0.3) == "< 1 s" and rough_duration(40) == "40 s"


def test_result_columns_keep_one_unit_and_line_up_their_decimal_points():
    assert aligned(740.2) == " 740.2   "
    assert aligned(0.2723) == "   0.2723"
    assert aligned(22.1) == "  22.10  "
    assert aligned(None) == " " * 9
    gpu = KernelResult("gemm", "torch", "cuda:0", "bf16", "fwd", "8448x48000x2816 TN",
                       median_s=3.3e-3, spread_s=4.3e-6, tflops=683.1, ratio=6.65)  # fmt: skip
    cpu = KernelResult("gemm", "torch", "cpu", "bf16", "fwd", "512x16x512 NN",
                       median_s=30.8e-6, spread_s=1.9e-6, tflops=0.2723, ratio=0.2615)  # fmt: skip
    copy = KernelResult("allreduce", "torch", "cuda", "fp32", "allreduce", "100000 floats",
                        median_s=109e-6, spread_s=57e-6, gbps=3.667, busbw_gbps=3.667)  # fmt: skip
    rows = [format_row(result) for result in (gpu, cpu, copy)]
    header = kernel_header()
    tflops = header.index("TFLOP/s") + len("TFLOP/s") - 5  # where the point falls
    assert rows[0][tflops] == "." and rows[1][tflops] == "."
    assert (
        rows[0][tflops - 3 : tflops + 2] == "683.1" and rows[1][tflops - 1 : tflops + 5] == "0.2723"
    )
    gbps = header.index(" GB/s") + len(" GB/s") - 5
    assert rows[2][gbps - 1 : gbps + 4] == "3.667" and rows[0][gbps] == " "
    assert "TFLOP/s" not in rows[0] and "GB/s" not in rows[2]  # the unit is the column's
    assert rows[0].rstrip().endswith("6.65×") and "0.26×" in rows[1]


def test_a_count_of_things_agrees_with_its_number_and_groups_its_thousands():
    assert [counted(n, "server") for n in (0, 1, 2, 12345)] == [
        "0 servers", "1 server", "2 servers", "12,345 servers",
    ]  # fmt: skip
    assert counted(1, "process", "processes") == "1 process"
    assert counted(3, "process", "processes") == "3 processes"


def test_the_iterations_a_case_was_timed_over_read_as_a_count_never_as_a_ratio():
    assert fmt_iterations(400) == "400 it" and fmt_iterations(2148) == "2,148 it"
    # Three CUDA graphs of 716 iterations each: 2,148 timed in all ('graph ×716' read as 716×).
    graph = KernelResult("gemm", "torch", "cuda:0", "bf16", "fwd", "4096x7133x4096 NT",
                         iterations=2148, median_s=3.2e-4, spread_s=1e-6, tflops=759.5,
                         ratio=6.98, method="graph", samples=3, per_sample=716, backend="flash",
                         padded_shape="4096x7136x4096 NT")  # fmt: skip
    assert method_text(graph) == "2,148 it, graph of 716, flash, padded"
    each = KernelResult("conv", "torch", "cpu", "fp32", "fwd", "s", iterations=300,
                        median_s=2e-3, tflops=0.1, method="each", samples=300)  # fmt: skip
    assert method_text(each) == "300 it, each"
    row = format_row(graph)
    assert row.endswith("6.98×  2,148 it, graph of 716, flash, padded")  # one × only: the ratio
    assert row.count("×") == 1


def test_a_baseline_adds_a_vs_base_column_with_a_mark_for_a_case_it_lacks():
    gemm = KernelResult("gemm", "torch", "cuda:0", "bf16", "fwd", "8448x48000x2816 TN",
                        median_s=3.3e-3, spread_s=4.3e-6, tflops=683.1, ratio=6.65,
                        iterations=400, method="graph", per_sample=400)  # fmt: skip
    assert "vs base" not in kernel_header() and format_row(gemm).count("×") == 1  # no baseline
    header = kernel_header(baseline=True)
    end = header.index("vs base") + len("vs base")  # each cell flush right under its heading
    rows = [format_row(gemm, vs_base_text(683.1 / 697.0, True)),
            format_row(gemm, vs_base_text(None, False))]  # fmt: skip
    assert rows[0][:end].endswith(" 6.65×       0.98×")
    assert rows[0][end:] == "  400 it, graph of 400"
    assert rows[1][:end].endswith(" 6.65× not in base") and rows[1][end:].startswith("  400 it")
    assert header.endswith("vs V100     vs base  timed")
    resnet = ModelResult("resnet50", "torch", "cuda", "bf16", 1, 256, images_per_s=6787.2,
                         reference_images_per_s=219.0)  # fmt: skip
    header = model_header(tokens=False, baseline=True)
    row = format_model_row(resnet, Scaling(None, None), vs_base_text(6787.2 / 6859.0, True))
    assert header.endswith("vs ref     vs base")
    assert row[: len(header)].endswith("31.0×       0.99×")


def test_probe_lists_values_in_the_fields_order_aligned_with_throttle_in_words():
    from dltui.commands.probe import value_lines
    from dltui.protocol.fields import GPU_FIELDS

    values = {"temp": 61.0, "zzz_new": 2.0, "throttle": 0x4 | 0x40, "util_gpu": 93.0,
              "mem_used": 0.6 * GIB, "power": 612.4}  # fmt: skip
    lines = value_lines(values, GPU_FIELDS)
    assert [line.split()[0] for line in lines] == [
        "util_gpu", "mem_used", "power", "temp", "throttle", "zzz_new"]  # fmt: skip
    assert lines[2] == "power" + " " * 17 + "       612 W  power draw"
    assert lines[1].endswith("   0.6 GiB  memory used")
    assert lines[4].endswith("  software power cap, hardware thermal slowdown")
    value_ends = {line.index(" GiB") + 4 for line in lines if "GiB" in line}
    value_ends |= {line.index(" W ") + 2 for line in lines if " W " in line}
    assert value_ends == {22 + 12}  # each value ends at the same column


def test_a_rate_keeps_its_unit_from_a_cpu_to_a_gpu():
    gpu = KernelResult("gemm", "torch", "cuda:0", "bf16", "fwd", "s", tflops=740.2)
    cpu = KernelResult("gemm", "torch", "cpu", "bf16", "fwd", "s", tflops=0.4276)
    copy = KernelResult("allreduce", "torch", "cpu", "fp32", "allreduce", "s", gbps=0.9079)
    assert rate_text(gpu) == "740.2 TFLOP/s" and rate_text(cpu) == "0.4276 TFLOP/s"
    assert rate_text(copy) == "0.9079 GB/s"  # not "907.9 MB/s" under a row of GB/s
