"""Results and a server's wiring as text, one line per timed case or training run, shared by
`dltui bench`, `dltui probe`, the TUI and the report; their numbers written by formatting.py."""

from __future__ import annotations

from dltui.formatting import (
    aligned,
    counted,
    fmt_duration,
    fmt_iterations,
    fmt_memory,
    fmt_ratio,
    significant,
)
from dltui.plans.scaling import Scaling, throughput
from dltui.plans.topology import (
    KIND_WORDS,
    Link,
    PeerFigure,
    gpu_names,
    link_groups,
    nearest_gpus,
    nic_text,
    nvlink_text,
    path_short,
    pcie_text,
)
from dltui.protocol.bench_results import KernelResult, ModelResult
from dltui.protocol.inventory import GpuInfo, Inventory
from dltui.protocol.topology import Nic, NumaNode, Topology

# --- results: one line per timed case or training run -------------------------------------------

VS_BASE_WIDTH = 11
NOT_IN_BASE = "not in base"
"""A case the --baseline file lacks, in its `vs base` column."""


def kernel_header(baseline: bool = False) -> str:
    """One unit per column, each number's decimal point under the others'; with a --baseline,
    each case's ratio to the baseline's figure beside its ratio to the published one."""
    return (
        f"{'kind':<9} {'shape':<28} {'pass':<11} {'prec':<5} {'device':<6} {'median':>10} "
        f"{'±':>8} {'TFLOP/s':>9} {'GB/s':>9} {'busbw GB/s':>10} {'vs V100':>7}"
        + _vs_base_column("vs base" if baseline else None)
        + "  timed"
    )


def vs_base_text(ratio: float | None, in_baseline: bool) -> str:
    """A case against the --baseline file's same case: '0.98×'; 'not in base' where the file
    lacks it; blank where this run has no rate."""
    return fmt_ratio(ratio) if in_baseline else NOT_IN_BASE


def _vs_base_column(vs_base: str | None) -> str:
    """The `vs base` column's cell (or heading) with the space before it; nothing where there
    is no --baseline."""
    return "" if vs_base is None else f" {vs_base:>{VS_BASE_WIDTH}}"


def device_text(device: str) -> str:
    """Where a result ran, in a word: "GPU 0", "GPU" (every GPU), "MIG" (an instance), "CPU"."""
    if device == "cpu":
        return "CPU"
    if device.startswith("MIG-"):
        return "MIG"
    return f"GPU {device.partition(':')[2]}".rstrip()


def rate_text(result: KernelResult) -> str:
    """The figure a reader compares, always in the same unit so a CPU's and a GPU's sit side
    by side: TFLOP/s for compute ('740.2 TFLOP/s', '0.4276 TFLOP/s'), GB/s for data movement."""
    if result.tflops is not None:
        return f"{significant(result.tflops, 4)} TFLOP/s"
    if result.gbps is not None:
        return f"{significant(result.gbps, 4)} GB/s"
    return "–"


def ratio_text(result: KernelResult) -> str:
    return fmt_ratio(result.ratio)


def method_text(result: KernelResult) -> str:
    """How the case was timed: the iterations in all and how a sample ran them ("2,148 it,
    graph of 716": CUDA graphs of 716 iterations), the backend a search chose ("36 it, graph of
    12, flash"), "padded" where padding changed the shape; empty for results from before methods
    were recorded."""
    if result.method is None:
        return ""
    how = result.method + (f" of {result.per_sample:,}" if result.per_sample > 1 else "")
    words = [fmt_iterations(result.iterations), how, result.backend]
    words.append("padded" if result.padded_shape else None)
    return ", ".join(word for word in words if word)


def link_text(result: KernelResult) -> str:
    """A copy against its link: "88% of NVLink ×18 (NVSwitch), 450 GB/s"; "" for others."""
    if result.link is None:
        return ""
    if result.nominal_gbps and result.gbps is not None:
        share = result.gbps / result.nominal_gbps
        return f"{share:.0%} of {result.link}, {result.nominal_gbps:.0f} GB/s"
    return result.link


def format_row(result: KernelResult, vs_base: str | None = None) -> str:
    """A case's line; `vs_base` its `vs base` cell (vs_base_text), None without a --baseline."""
    if result.error is not None:
        return (
            f"{result.kind:<9} {result.shape[:28]:<28} {result.direction:<11} "
            f"{result.precision:<5} {device_text(result.device):<6} error: {result.error}"
        )
    return (
        f"{result.kind:<9} {result.shape[:28]:<28} {result.direction:<11} {result.precision:<5} "
        f"{device_text(result.device):<6} "
        f"{fmt_duration(result.median_s):>10} {fmt_duration(result.spread_s):>8} "
        f"{aligned(result.tflops)} {aligned(result.gbps)} {aligned(result.busbw_gbps, 5)} "
        f"{ratio_text(result):>7}{_vs_base_column(vs_base)}  {method_text(result)}  "
        f"{link_text(result)}"
    ).rstrip()


MODEL_HEADER = (
    f"{'model':<10} {'gpus':>4} {'srv':>3} {'batch':>5} {'prec':<5} {'device':<6} "
    f"{'images/s':>10} {'±':>7} "
    f"{'per GPU':>9} {'eff 1 GPU':>9} {'eff srv':>7} {'vs ref':>7}"
)


def model_header(tokens: bool, baseline: bool = False) -> str:
    """The training table's header: its rate column counts tokens when every model is a GPT
    (a mixed table says the unit on each GPT row); with a --baseline, a `vs base` column."""
    header = MODEL_HEADER + _vs_base_column("vs base" if baseline else None)
    return header.replace("  images/s", "  tokens/s") if tokens else header


def percent(value: float | None) -> str:
    return f"{value * 100:.1f}%" if value is not None else ""


def images_text(value: float | None) -> str:
    return f"{value:,.1f}" if value is not None else "–"


def model_what(result: ModelResult) -> str:
    """The run in a few words: "resnet50 ×8 GPUs bf16 batch 256", "gpt-1.3b ×8 GPUs bf16
    batch 16 seq 2048 fsdp"."""
    unit = "GPU" if result.device == "cuda" else "proc"
    count = "×" + counted(result.gpus, unit)
    if result.servers > 1:
        count += f" on {result.servers} servers"
    what = f"{result.model} {count} {result.precision} batch {result.batch}"
    if result.seq_len is not None:
        what += f" seq {result.seq_len} {result.parallel or 'ddp'}"
    return what


def mfu_text(result: ModelResult) -> str:
    """ "MFU 41.2%", or "" where there is none (a CNN, a CPU, a GPU whose peak is unknown)."""
    return f"MFU {result.mfu:.1%}" if result.mfu is not None else ""


def model_figure(result: ModelResult) -> str:
    """A run's figure with its unit: "6,859.0 img/s", "512,004 tok/s · MFU 41.2%"."""
    if result.seq_len is None:
        return f"{images_text(result.images_per_s)} img/s"
    rate = f"{result.tokens_per_s:,.0f}" if result.tokens_per_s is not None else "–"
    mfu = mfu_text(result)
    return f"{rate} tok/s" + (f" · {mfu}" if mfu else "")


def loss_text(result: ModelResult) -> str:
    """A GPT run's loss from its first step to its last: "loss 10.95→3.21"."""
    if len(result.losses) < 2:
        return ""
    return f"loss {result.losses[0]:.3g}→{result.losses[-1]:.3g}"


def format_model_row(result: ModelResult, scaling: Scaling, vs_base: str | None = None) -> str:
    """A training run's line; `vs_base` as format_row's (a time-to-accuracy run has none)."""
    head = (
        f"{result.model:<10} {result.gpus:>4} {result.servers:>3} {result.batch:>5} "
        f"{result.precision:<5} {device_text(result.device):<6}"
    )
    if result.error is not None:
        return f"{head} error: {result.error}"
    if result.data != "synthetic":
        reached = result.time_to_accuracy_s is not None
        how = (
            f"top-1 {percent(result.accuracy)} in {fmt_duration(result.time_to_accuracy_s)}"
            if reached
            else f"top-1 {percent(result.accuracy)}, target {percent(result.target_accuracy)} "
            f"not reached"
        )
        rate = images_text(result.images_per_s)
        return f"{head} {rate:>10} images/s; {how} ({result.epochs} epochs)"
    ratio = (
        fmt_ratio(result.images_per_s / result.reference_images_per_s)
        if result.images_per_s and result.reference_images_per_s
        else ""
    )
    figure = throughput(result)
    per_gpu = figure / result.gpus if figure else None
    words = [result.placement or ""]
    if result.seq_len is not None:  # the columns count tokens: say so, and what else it gave
        words = [f"tok/s, seq {result.seq_len} {result.parallel or 'ddp'}", mfu_text(result),
                 loss_text(result), *words]  # fmt: skip
    return (
        f"{head} {images_text(figure):>10} {images_text(result.spread):>7} "
        f"{images_text(per_gpu):>9} {percent(scaling.vs_one_gpu):>9} "
        f"{percent(scaling.vs_one_server):>7} {ratio:>7}{_vs_base_column(vs_base)}  "
        f"{'; '.join(w for w in words if w)}"
    ).rstrip()


# --- a server's wiring as text: dltui probe, the report, the TUI's topology views -------------


def numa_text(node: NumaNode) -> str:
    """ "NUMA 0: CPUs 0-31, 512.0 GiB"."""
    parts = [f"CPUs {node.cpus}" if node.cpus else None,
             fmt_memory(node.memory_total) if node.memory_total is not None else None]  # fmt: skip
    return f"NUMA {node.node}: " + (", ".join(part for part in parts if part) or "?")


def host_wiring(topology: Topology) -> str:
    """ "2 sockets · 32 cores · NUMA 0: CPUs 0-31, 512.0 GiB · NUMA 1: …"."""
    words = []
    if topology.sockets is not None:
        words.append(counted(topology.sockets, "socket"))
    if topology.cores is not None:
        words.append(f"{topology.cores} cores")
    words += [numa_text(node) for node in topology.numa_nodes]
    return " · ".join(words) or "sysfs said nothing of sockets or NUMA nodes"


def gpu_wiring(topology: Topology, gpu: GpuInfo) -> str:
    """ "NUMA 0 · CPUs 0-31 · PCIe gen5 x16 · NVLink 4.0, 18 to NVSwitches"."""
    place = next((p for p in topology.gpus if p.index == gpu.index), None)
    words = []
    if place is not None and place.numa_node is not None:
        words.append(f"NUMA {place.numa_node}")
    if place is not None and place.cpu_affinity:
        words.append(f"CPUs {place.cpu_affinity}")
    words.append(f"PCIe {pcie_text(gpu)}")
    if (nvlink := nvlink_text(topology, gpu.index)) is not None:
        words.append(nvlink)
    return " · ".join(words)


def group_text(links: list[Link], pairs: int) -> str:
    """One group of alike pairs: "NV18 NVLink ×18 (NVSwitch), 450 GB/s each way, P2P read,
    write, atomics: all 28 pairs"."""
    first = links[0]
    words = first.words if first.kind in ("nvlink", "nvswitch") else KIND_WORDS[first.kind]
    if first.nominal_gbps is not None:
        words += f", {first.nominal_gbps:.0f} GB/s each way"
    if first.p2p:
        words += f", {first.p2p}"
    which = (f"all {pairs} pairs" if len(links) == pairs and pairs > 1
             else " ".join(f"{link.a}↔{link.b}" for link in links))  # fmt: skip
    return f"{first.short:<4} {words}: {which}"


def nic_wiring(nic: Nic, topology: Topology) -> str:
    """nic_text, then its nearest GPUs: "… · PIX to GPU 2,3"."""
    nearest = nearest_gpus(nic, topology)
    if nearest is None:
        return nic_text(nic)
    path, gpus = nearest
    return f"{nic_text(nic)} · {path_short(path)} to {gpu_names(gpus)}"


def peer_text(figure: PeerFigure) -> str:
    """ "GPU0↔GPU1 NVLink ×18 (NVSwitch): 395 GB/s (88% of 450)", both ways where measured."""
    link = figure.link
    rate = f"{figure.gbps:.0f}"
    if figure.back_gbps is not None:
        rate += f" / {figure.back_gbps:.0f}"
    text = f"GPU{link.a}↔GPU{link.b} {link.label}: {rate} GB/s"
    if figure.of_nominal is not None and link.nominal_gbps is not None:
        text += f" ({figure.of_nominal:.0%} of {link.nominal_gbps:.0f})"
    return text


def wiring_lines(inventory: Inventory) -> list[str]:
    """The whole wiring in labelled lines (dltui probe, the report's text)."""
    topology = inventory.topology
    if topology is None:
        return ["wiring    not reported (an agent older than topology)"]
    lines = [f"host      {host_wiring(topology)}"]
    lines += [f"gpu {gpu.index:<5} {gpu_wiring(topology, gpu)}" for gpu in inventory.gpus]
    groups = link_groups(topology, inventory.gpus)
    pairs = sum(len(links) for links in groups)
    lines += [f"links     {group_text(links, pairs)}" for links in groups]
    lines += [f"nic       {nic_wiring(nic, topology)}" for nic in topology.nics]
    unanswered = [f"{name}: {why}" for name, why in topology.unanswered.items()]
    if unanswered:
        lines.append("nvml said " + "; ".join(unanswered))
    return lines
