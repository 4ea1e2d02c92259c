"""`gputui fit` on a GPU in MIG mode, through real pynvml and the simulated libnvidia-ml.so.1.

A CUDA job on a MIG GPU gets one instance, never the card: the targets are the instances
(profile, GI/CI ids, each one's memory), and when none holds the job now the answer says
which would. The scenario is ../shared/fakenvml's mig scenario with fixed
PIDs. Skipped without gcc or the fake's sources.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakenvml_lib import FAKE, build_fake

ROOT = Path(__file__).resolve().parents[3]
FROZEN = "1767225600"
GiB = 1 << 30
MiB = 1 << 20

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the fake NVML"),
    pytest.mark.skipif(
        not (FAKE / "scenarios" / "mig.conf.in").is_file(), reason=f"no fake NVML at {FAKE}"
    ),
]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("fakenvml-mig")
    build_fake(f"BUILD={folder}")
    text = (FAKE / "scenarios" / "mig.conf.in").read_text()
    pid = iter(range(6001, 6100))
    while "@PID@" in text:
        text = text.replace("@PID@", str(next(pid)), 1)
    scenario = folder / "mig.conf"
    scenario.write_text(text)
    out = dict(os.environ)
    out.update(
        LD_LIBRARY_PATH=str(folder),
        FAKE_NVML_SCENARIO=str(scenario),
        FAKE_NVML_TIME=FROZEN,
        FAKE_NVML_QUIET="1",
        PYTHONPATH=str(ROOT / "src"),
    )
    return out


def _fit(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", "fit", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_transformer_is_checked_against_each_mig_instance_not_the_card(
    env: dict[str, str],
) -> None:
    r = _fit(env, "examples/models.toml", "--model", "llama-3-8b-lora")
    assert r.returncode == 1, r.stderr  # fits no instance now, nor the 3090's free memory
    out = r.stdout
    assert "fits in 80.00 GiB" not in out and "42.56 GiB free" not in out
    assert "GPU 0 MIG 3g.40gb (GI 1 / CI 0)" in out
    assert "GPU 0 MIG 2g.20gb (GI 2 / CI 0)" in out
    assert "GPU 0 MIG 1g.10gb (GI 3 / CI 0)" in out
    assert "now (15.81 GiB free): does not fit" in out
    (advice,) = [ln for ln in out.splitlines() if "MIG on GPU 0" in ln]
    assert "3g.40gb (GI 1 / CI 0) once 4.6 GiB is freed" in advice
    assert "needs 3g.40gb" in advice


def test_json_targets_are_the_instances_with_their_ids_and_memory(env: dict[str, str]) -> None:
    r = _fit(env, "examples/models.toml", "--model", "llama-3-8b-lora", "--json")
    data: dict[str, Any] = json.loads(r.stdout)
    (entry,) = data["models"]
    assert entry["kind"] == "transformer"
    gpus = [e["gpu"] for e in entry["estimates"]]
    migs = [g["mig"] for g in gpus if g["mig"]]
    assert [(m["profile"], m["gpu_instance_id"], m["compute_instance_id"]) for m in migs] == [
        ("3g.40gb", 1, 0),
        ("2g.20gb", 2, 0),
        ("1g.10gb", 3, 0),
    ]
    by_profile = {g["mig"]["profile"]: g for g in gpus if g["mig"]}
    assert by_profile["3g.40gb"]["memory_total_bytes"] == 40192 * MiB
    assert by_profile["3g.40gb"]["memory_free_bytes"] == (40192 - 24000) * MiB
    assert not any(g["memory_total_bytes"] == 81920 * MiB for g in gpus)  # never the card
    assert entry["mig_advice"] and "once 4.6 GiB is freed" in entry["mig_advice"][0]


def test_layer_model_and_index_pick_the_instances_of_that_gpu(env: dict[str, str]) -> None:
    r = _fit(env, "examples/models.toml", "--model", "mnist-cnn", "--index", "0", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [g["mig"]["profile"] for g in data["gpus"]] == ["3g.40gb", "2g.20gb", "1g.10gb"]
    limits = {
        p["limit_bytes"] for m in data["models"] for e in m["estimates"] for p in e["precisions"]
    }
    assert limits <= {
        40192 * MiB,
        19968 * MiB,
        9984 * MiB,
    }


def test_layer_model_json_says_which_profile_would_hold_it(env: dict[str, str]) -> None:
    r = _fit(env, "examples/models.toml", "--model", "mnist-cnn", "--batch-size", "100000",
             "--index", "0", "--json")  # fmt: skip
    assert r.returncode == 1, r.stderr
    (entry,) = json.loads(r.stdout)["models"]
    (line,) = entry["mig_advice"]
    assert line.startswith("MIG on GPU 0: fits the 3g.40gb (GI 1 / CI 0) once ")
    assert "needs 3g.40gb (about 39.2 GiB) or larger" in line
