"""A server described as a paper states it: what it accepts, what it refuses, and the answer
`dltui predict` prints for it."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from dltui.predict.described import DescriptionError, model, server
from tests.conftest import ROOT, dltui_command

PAPER = """\
[server]
name = "4 GPUs a server, 100 Gbit/s InfiniBand"
gpus = 4
intra_gbps = 20
network_gbit = 100
transport = "rdma"

[model]
name = "resnet50"
batch = 64
images_per_s = 220
"""


def test_a_described_server_becomes_links_at_their_stated_rates():
    found = server({"gpus": 8, "intra_gbps": 450, "network_gbit": 400, "nics": 8,
                    "transport": "tcp", "efficiency": 0.5})  # fmt: skip
    assert found.gpus == 8
    assert found.fabric.intra is not None and found.fabric.intra.busbw == 450e9
    assert found.fabric.inter is not None
    assert found.fabric.inter.busbw == pytest.approx(8 * 400e9 / 8 * 0.5)
    assert found.fabric.inter.line_gbit == pytest.approx(3200)


def test_a_known_model_needs_no_parameter_count():
    found = model({"name": "VGG16", "batch": 32, "step_ms": 100})
    assert found.gradient_bytes == round(138.4e6 * 4)
    assert found.step_s == pytest.approx(0.1)
    half = model({"name": "x", "batch": 32, "images_per_s": 320, "params": 1e6,
                  "gradient_bytes": 2})  # fmt: skip
    assert half.gradient_bytes == 2_000_000 and half.step_s == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"gpus": 8}, "intra_gbps is needed"),
        ({"gpus": 0, "intra_gbps": 1}, "server.gpus"),
        ({"gpus": 1, "network_gbit": -1}, "server.network_gbit is out of range"),
        ({"gpus": 1, "network_gbit": "fast"}, "server.network_gbit is a number"),
        ({"gpus": 1, "network_gbit": 10, "transport": "carrier pigeon"}, "rdma or tcp"),
        ({"gpus": 1, "network_gbit": 10, "efficiency": 1.5}, "at most 1"),
        ({"gpu": 1}, "unknown key 'gpu'"),
        ({"gpus": 1, "network_gbit": 10, "transport": ["rdma"]}, "rdma or tcp, not"),
        ({"gpus": 1, "network_gbit": 1e-310}, "server.network_gbit is out of range"),
        # A key of a link not described would be dropped without a word.
        (
            {"gpus": 1, "efficiency": 1.5},
            "server.efficiency describes a link: give server.network_gbit",
        ),
        ({"gpus": 1, "nics": 2}, "server.nics describes a link"),
        ({"gpus": 1, "intra_latency_us": 3}, "give server.intra_gbps too"),
    ],
)
def test_a_bad_server_is_refused_naming_the_key(values, words):
    with pytest.raises(DescriptionError, match=words):
        server(values)


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"name": "resnet50", "batch": 64}, "images_per_s or its step_ms"),
        ({"name": "resnet50", "batch": 64, "images_per_s": 1, "step_ms": 1}, "one of them"),
        ({"name": "mystery", "batch": 64, "images_per_s": 100}, "params is needed"),
        ({"name": "resnet50", "batch": 64, "images_per_s": 100, "overlap": "yes"}, "true or false"),
        ({"name": "resnet50", "batch": 0, "images_per_s": 100}, "model.batch"),
        ({"name": "resnet50", "batch": 8, "images_per_s": 1e-320}, "images_per_s is out of"),
        ({"name": "x", "batch": 8, "images_per_s": 10, "params": 0.1}, "params counts"),
    ],
)
def test_a_bad_model_is_refused_naming_the_key(values, words):
    with pytest.raises(DescriptionError, match=words):
        model(values)


def test_predict_answers_for_a_described_server(tmp_path):
    described = tmp_path / "paper.toml"
    described.write_text(PAPER)
    command = dltui_command("predict", "--server", str(described), "--target-efficiency", "0.9")
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("# predicted: resnet50, batch 64 per GPU")
    assert any("described: 100 Gbit/s rdma at 90%" in line for line in lines)
    assert any("assumed" in line for line in lines)  # no profile: the overlap is assumed
    rows = {line.split()[0]: line for line in lines if line[:1].isdigit()}
    assert set(rows) == {"1×1", "1×4", "2×4", "4×4", "8×4", "16×4", "64×4"}
    assert "220" in rows["1×1"] and "100.0%" in rows["1×1"]

    as_json = subprocess.run([*command, "--json", "-"], capture_output=True, text=True,
                             cwd=ROOT, timeout=60)  # fmt: skip
    table = json.loads(as_json.stdout)
    assert table["predicted"] is True and table["model"] == "resnet50"
    by_layout = {row["layout"]: row for row in table["rows"]}
    assert by_layout["1x1"]["predicted_images_per_s"] == pytest.approx(220)
    efficiencies = [by_layout[f"{s}x4"]["predicted_efficiency_vs_gpu"] for s in (1, 2, 4, 64)]
    assert efficiencies == sorted(efficiencies, reverse=True)  # more servers, more waiting
    assert by_layout["64x4"]["network_gbit_for_target"] > 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ("--layouts 2y4", "a layout is SERVERSxGPUS"),
        ("--target-efficiency 1.5", "a share from 0 to 1"),
        ("--gpus-per-server 8 --batch 64 --images-per-s 100",
         "server.intra_gbps (--intra-gbps) is needed"),
        ("--batch 64 --images-per-s 100 --model mystery", "model.params (--params) is needed"),
        ("--batch 64 --images-per-s -5 --model resnet50",
         "model.images_per_s (--images-per-s) is out of range: -5.0"),
        ("--gpus-per-server 0 --batch 64 --images-per-s 5 --model resnet50",
         "server.gpus (--gpus-per-server) is a whole number from 1"),
        ("", "nothing to predict from"),
        ("--layouts ,", "no layout in ','"),
        ("--server missing.toml", "cannot read server description missing.toml"),
        ("--server tests", "server description tests: is a folder"),
        ("--server README.md", "server description README.md is not valid TOML"),
        ("--json tests", "cannot write tests: tests is a folder"),
        ("--json no/such/out.json", "cannot write no/such/out.json: no/such is not a folder"),
    ],
)  # fmt: skip
def test_bad_requests_exit_2_with_one_clear_line(args, words):
    done = subprocess.run(dltui_command("predict", *args.split()), capture_output=True, text=True,
                          cwd=ROOT, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert words in done.stderr and "Traceback" not in done.stderr


def test_options_win_over_the_description_and_a_clash_of_models_is_refused(tmp_path):
    described = tmp_path / "paper.toml"
    described.write_text(PAPER)  # images_per_s = 220, batch 64: 291 ms a step
    command = dltui_command("predict", "--server", str(described), "--layouts", "1x1")
    faster = subprocess.run([*command, "--step-ms", "80"], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)  # fmt: skip
    assert faster.returncode == 0, faster.stderr
    assert "80 ms a step" in faster.stdout and "800" in faster.stdout.splitlines()[-1]
    clash = subprocess.run([*command, "--model", "vgg16"], capture_output=True, text=True,
                           cwd=ROOT, timeout=60)  # fmt: skip
    assert clash.returncode == 2
    assert "--model vgg16 and the described model.name 'resnet50' disagree" in clash.stderr


def test_the_h200_recording_gives_an_nvlink_curve_for_a_described_model():
    """The two-H200 all-reduce results recorded on the device are an NVLink curve: a described
    ResNet-50 at the H200's measured one-GPU images/s is predicted on eight GPUs with it."""
    recording = ROOT / "tests" / "fixtures" / "h200x2-kernels.dlrec"
    command = dltui_command("predict", str(recording), "--model", "resnet50", "--batch", "256",
                            "--images-per-s", "6787", "--layouts", "1x1,1x8,2x4",
                            "--network-gbit", "400", "--json", "-")  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    (inside,) = [s for s in table["sources"] if s.startswith("inside a server")]
    assert "measured: nccl all-reduce, 2 GPUs" in inside and "7 sizes" in inside
    busbw = float(inside.split("; ")[1].split(" GB/s")[0])
    assert 250 < busbw < 450  # NVLink 4 between two H200s, as nccl-tests measures it
    rows = {row["layout"]: row for row in table["rows"]}
    assert rows["1x1"]["predicted_images_per_s"] == pytest.approx(6787)
    assert 0.9 < rows["1x8"]["predicted_efficiency_vs_gpu"] < 1
    assert rows["2x4"]["predicted_efficiency_vs_gpu"] < rows["1x8"]["predicted_efficiency_vs_gpu"]


def test_inputs_are_read_by_what_they_hold_whatever_their_names(tmp_path):
    """`bench --json` writes any name it is given, and a recording may be renamed: the
    one-GPU profile saved without .json and the H200 curves' recording saved as .json are read
    as what they are. A .dlrec that is no recording is said to be damaged."""
    profile, curves = tmp_path / "profile-resnet50", tmp_path / "curves.json"
    shutil.copyfile(ROOT / "docs" / "results" / "profiles-h200.json", profile)
    shutil.copyfile(ROOT / "tests" / "fixtures" / "h200x2-kernels.dlrec", curves)
    done = subprocess.run(dltui_command("predict", str(profile), str(curves), "--model",
                                        "resnet50", "--layouts", "1x1,1x8", "--json", "-"),
                          capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    sources = json.loads(done.stdout)["sources"]
    assert any(s.startswith("step: measured: torch resnet50") for s in sources), sources
    assert any(s.startswith("inside a server: measured: nccl all-reduce") for s in sources)

    empty = tmp_path / "friday.dlrec"
    empty.touch()
    done = subprocess.run(dltui_command("predict", str(empty)), capture_output=True, text=True,
                          cwd=ROOT, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert "friday.dlrec: an empty file: no header, no frames" in done.stderr
