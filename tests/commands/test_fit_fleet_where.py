"""`fit --prometheus` where jobs really run, against a real Prometheus.

The fleet: `mig-1`, a dcgm-exporter page of an A100 80 GB in MIG mode (one series per MIG
instance, labelled GPU_I_PROFILE / GPU_I_ID, as dcgm-exporter exports them), and `h100-a`,
two H100 80 GB with the same free memory. A job gets one MIG instance, never the card; every
model kind (HF config, models TOML with transformers) is ranked across the fleet, with the
estimate the local `fit` uses, computed once per distinct (GPU, free memory).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.prometheus_harness import PROMETHEUS, PrometheusServer, StaticEndpoint, dcgm_text

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROMETHEUS is None, reason="needs the prometheus binary"),
]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = str(ROOT / "examples" / "models.toml")
LLAMA = str(ROOT / "examples" / "llm" / "llama-3-8b.json")
MiB = 1 << 20
# (profile, GPU instance id, used MiB, free MiB): the fake NVML's mig scenario
INSTANCES = (("3g.40gb", 1, 24000, 16192), ("2g.20gb", 2, 12288, 7680), ("1g.10gb", 3, 2048, 7936))


def mig_page() -> str:
    labels = (
        'gpu="0",UUID="GPU-a1b2c3d4-e5f6-4789-8abc-def012345678",device="nvidia0",'
        'modelName="NVIDIA A100-SXM4-80GB",Hostname="mig-1",'
        'GPU_I_PROFILE="{profile}",GPU_I_ID="{gi}"'
    )
    lines = []
    for name, col in (("DCGM_FI_DEV_FB_USED", 2), ("DCGM_FI_DEV_FB_FREE", 3)):
        lines.append(f"# TYPE {name} gauge")
        for inst in INSTANCES:
            lab = labels.format(profile=inst[0], gi=inst[1])
            lines.append(f"{name}{{{lab}}} {float(inst[col])!r}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    folder = tmp_path_factory.mktemp("fleet-where")
    pages = [
        StaticEndpoint(mig_page()),
        StaticEndpoint(dcgm_text("h100-a", 2, used_mib=lambda g: 4000.0)),
    ]
    server = PrometheusServer(folder / "prometheus", [p.address for p in pages]).start()
    try:
        server.wait_targets_up()
        server.wait_for("DCGM_FI_DEV_FB_FREE", 3 + 2)
        yield server
    finally:
        server.stop()
        for p in pages:
            p.stop()


def gputui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", *args], capture_output=True, text=True, timeout=120
    )


def _entry(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(e for e in data["fleet"] if e["model"] == name)


def test_a_mig_gpu_is_one_candidate_per_instance(prom: PrometheusServer) -> None:
    r = gputui("fit", EXAMPLES, "--model", "mnist-cnn", "--prometheus", prom.url, "--json")
    assert r.returncode == 0, r.stderr
    gpus = _entry(json.loads(r.stdout), "mnist-cnn")["gpus"]
    mig = [g for g in gpus if g["host"] == "mig-1"]
    assert sorted((g["mig"]["profile"], g["mig"]["gpu_instance_id"]) for g in mig) == [
        ("1g.10gb", 3),
        ("2g.20gb", 2),
        ("3g.40gb", 1),
    ]
    for g in mig:  # each instance's own memory: used + free, never the card's 80 GiB
        inst = next(i for i in INSTANCES if i[1] == g["mig"]["gpu_instance_id"])
        assert g["memory_total"] == (inst[2] + inst[3]) * MiB
        assert g["memory_free"] == inst[3] * MiB


def test_transformers_of_a_models_toml_are_ranked_not_skipped(prom: PrometheusServer) -> None:
    r = gputui("fit", EXAMPLES, "--model", "llama-3-8b-lora", "--prometheus", prom.url, "--json")
    assert r.returncode == 0, r.stderr  # fits on the H100s
    assert "skipped" not in r.stderr
    entry = _entry(json.loads(r.stdout), "llama-3-8b-lora")
    assert entry["kind"] == "transformer"
    gpus = entry["gpus"]
    assert [g["host"] for g in gpus[:2]] == ["h100-a", "h100-a"] and gpus[0]["fits"]
    big = next(g for g in gpus if g["mig"] and g["mig"]["profile"] == "3g.40gb")
    assert big["fits"] is False  # 20.4 GiB peak, 15.8 GiB free in the instance
    (advice,) = entry["mig_advice"]
    assert advice.startswith("MIG on mig-1 GPU 0: fits the 3g.40gb (GI 1) once 4.6 GiB is freed")
    assert "needs 3g.40gb (about 39.2 GiB) or larger" in advice
    text = gputui("fit", EXAMPLES, "--model", "llama-3-8b-lora", "--prometheus", prom.url)
    assert "llama-3-8b-lora (transformer): fits now on 2 of 5 GPUs" in text.stdout
    assert "mig-1 GPU 0 MIG 3g.40gb (GI 1)" in text.stdout


def test_hf_config_is_ranked_across_the_fleet(prom: PrometheusServer) -> None:
    r = gputui("fit", LLAMA, "--mode", "inference", "--prometheus", prom.url, "--json")
    assert r.returncode == 0, r.stderr
    (entry,) = json.loads(r.stdout)["fleet"]
    assert entry["kind"] == "transformer" and len(entry["gpus"]) == 5
    local = gputui("fit", LLAMA, "--mode", "inference", "--gpu", "H100 SXM5 80GB", "--json")
    assert local.returncode == 0, local.stderr
    local_peak = json.loads(local.stdout)["models"][0]["estimates"][0]["peak_bytes"]
    h100 = [g for g in entry["gpus"] if g["host"] == "h100-a"]
    assert {g["peak_bytes"] for g in h100} == {local_peak}  # the local estimate, per GPU


def test_each_gpu_and_free_memory_pair_is_estimated_once(
    prom: PrometheusServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import gputui.fit.entry as entry
    from gputui.cli import main

    calls: list[tuple[int, int | None]] = []
    real = entry.check

    def counting(request: Any) -> Any:
        calls.extend((t.memory_total, t.memory_free) for t in request.targets)
        return real(request)

    monkeypatch.setattr(entry, "check", counting)
    code = main(["fit", LLAMA, "--mode", "inference", "--prometheus", prom.url, "--json"])
    assert code == 0, capsys.readouterr().err
    # 5 candidates: the two H100s share card and free memory, so 4 estimates
    assert len(calls) == len(set(calls)) == 4


def test_every_model_of_the_shipped_examples_is_ranked(prom: PrometheusServer) -> None:
    r = gputui("fit", EXAMPLES, "--prometheus", prom.url, "--json")
    assert r.returncode in (0, 1), r.stderr
    assert r.stderr == ""  # no "skipped" note
    fleet = json.loads(r.stdout)["fleet"]
    kinds = {e["model"]: e["kind"] for e in fleet}
    assert kinds["llama-3-8b-lora"] == kinds["gpt2-serve"] == "transformer"
    assert kinds["mnist-cnn"] == "graph"
    assert all(len(e["gpus"]) == 5 for e in fleet)
    text = gputui("fit", EXAMPLES, "--prometheus", prom.url)
    assert "gpt2-serve (transformer): fits now on 5 of 5 GPUs" in text.stdout


def test_gguf_is_ranked_across_the_fleet(prom: PrometheusServer) -> None:
    gguf = str(ROOT / "tests" / "fixtures" / "gguf" / "tiny-llama-q8_0.gguf")
    r = gputui("fit", gguf, "--prometheus", prom.url, "--json")
    assert r.returncode == 0, r.stderr
    (entry,) = json.loads(r.stdout)["fleet"]
    assert entry["kind"] == "transformer" and len(entry["gpus"]) == 5
    assert entry["workload"]["mode"] == "generate"


def test_match_selects_the_mig_instances_too(prom: PrometheusServer) -> None:
    r = gputui(
        "fit", EXAMPLES, "--model", "mnist-cnn", "--prometheus", prom.url,
        "--match", 'Hostname="mig-1"', "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    gpus = _entry(json.loads(r.stdout), "mnist-cnn")["gpus"]
    assert sorted(g["mig"]["profile"] for g in gpus) == ["1g.10gb", "2g.20gb", "3g.40gb"]
