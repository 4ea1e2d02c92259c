"""`fit --prometheus` follows distinct (card, free memory) keys, not GPUs.

The fleet (benchmarks/fleet_server.py, the benchmark's own, at a small size, behind a
real Prometheus): 4 hosts of 4 GPUs. gpu-0000 and gpu-0001 are H100s with the same
free memory on every GPU; gpu-0002 is an H100 with 500 MiB free; gpu-0003 an A100 40GB.
Three keys for 16 GPUs: one engine call each, and the output grouped by answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.fleet_server import Fleet, host_card, start_fleet
from tests.prometheus_harness import PROMETHEUS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROMETHEUS is None, reason="needs the prometheus binary"),
]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = str(ROOT / "examples" / "models.toml")
MiB = 1 << 20
GPUS = 4


def used(host: int, gpu: int) -> float:
    if host == 2:
        return host_card(2)[1] - 500.0
    return 4096.0


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with start_fleet(tmp_path_factory.mktemp("fleet-groups"), 4, gpus=GPUS, used=used) as f:
        yield f


def gputui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", *args], capture_output=True, text=True, timeout=120
    )


def fit_json(fleet: Fleet, *extra: str) -> dict[str, Any]:
    r = gputui("fit", EXAMPLES, "--model", "mnist-cnn", "--prometheus", fleet.url, "--json", *extra)
    assert r.returncode == 0, r.stderr
    (entry,) = json.loads(r.stdout)["fleet"]
    return dict(entry)


def test_hosts_with_the_same_card_and_free_memory_are_one_group(fleet: Fleet) -> None:
    entry = fit_json(fleet)
    groups = entry["groups"]
    assert [(g["name"], g["fits"], g["hosts"], g["gpus"]) for g in groups] == [
        ("NVIDIA H100 80GB HBM3", True, 2, 8),  # gpu-0000 and gpu-0001
        ("NVIDIA A100-SXM4-40GB", True, 1, 4),
        ("NVIDIA H100 80GB HBM3", False, 1, 4),  # 500 MiB free
    ]
    h100 = groups[0]
    free = (host_card(0)[1] - 4096) * MiB
    assert h100["memory_free"] == {"min": free, "max": free}
    assert h100["best"] == {"host": "gpu-0000", "gpu": 0, "mig": None}
    assert h100["max_batch_size_free"]["min"] == h100["max_batch_size_free"]["max"] > 0
    assert groups[2]["memory_free"] == {"min": 500 * MiB, "max": 500 * MiB}
    assert sum(g["gpus"] for g in groups) == entry["gpus_total"] == 16


def test_the_json_lists_the_best_ten_and_every_gpu_with_all(fleet: Fleet) -> None:
    best = fit_json(fleet)
    assert best["gpus_listed"] == "best" and len(best["gpus"]) == 10
    every = fit_json(fleet, "--all")
    assert every["gpus_listed"] == "all" and every["gpus_total"] == 16
    gpus = every["gpus"]
    assert sorted((g["host"], g["gpu"]) for g in gpus) == [
        (f"gpu-{h:04d}", g) for h in range(4) for g in range(GPUS)
    ]
    assert gpus[:10] == best["gpus"]  # the same ranking, cut
    assert [g["fits"] for g in gpus] == [True] * 12 + [False] * 4
    for g in gpus:  # every GPU keeps its own figures
        assert set(g) >= {"host", "gpu", "memory_free", "peak_bytes", "max_batch_size_free"}


def test_text_groups_and_lists_every_gpu_with_all(fleet: Fleet) -> None:
    r = gputui("fit", EXAMPLES, "--model", "mnist-cnn", "--prometheus", fleet.url)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "mnist-cnn (train, batch 128): fits now on 12 of 16 GPUs" in lines
    assert any(
        line.startswith("  fits now on 2 hosts (8 GPUs): NVIDIA H100 80GB HBM3  free 75.6 GiB")
        for line in lines
    ), r.stdout
    assert any(line.startswith("  does not fit now on 1 host (4 GPUs): ") for line in lines)
    assert "  best 10 of 16 GPUs listed; `--all` for every GPU" in lines
    rows = [line for line in lines if line[:6].strip().rstrip(".").isdigit()]
    assert len(rows) == 10
    r = gputui("fit", EXAMPLES, "--model", "mnist-cnn", "--prometheus", fleet.url, "--all")
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line[:6].strip().rstrip(".").isdigit()]
    assert len(rows) == 16
    assert "--all` for every GPU" not in r.stdout


def test_one_estimate_per_card_and_free_memory(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import gputui.fit.entry as entry
    from gputui.cli import main

    calls: list[tuple[str, int, int | None]] = []
    real = entry.check

    def counting(request: Any) -> Any:
        for target in request.targets:
            calls.append((target.name, target.memory_total, target.memory_free))
        return real(request)

    monkeypatch.setattr(entry, "check", counting)
    code = main(["fit", EXAMPLES, "--model", "mnist-cnn", "--prometheus", fleet.url, "--json"])
    assert code == 0, capsys.readouterr().err
    # 16 GPUs, 3 distinct (card, free memory): 3 calls, never the same twice
    assert len(calls) == len(set(calls)) == 3
    assert json.loads(capsys.readouterr().out)["fleet"][0]["gpus_total"] == 16


def test_all_is_only_for_a_fleet(tmp_path: Path) -> None:
    r = gputui("fit", EXAMPLES, "--gpu", "H100 SXM5 80GB", "--all")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "gputui: --all: only with --prometheus URL (it lists every GPU of the fleet)"
    ]
    r = gputui("snapshot", "--demo", "--all")
    assert r.returncode == 2
    assert "--all: only with --prometheus URL" in r.stderr


def test_snapshot_text_has_every_gpu_of_a_small_fleet(fleet: Fleet) -> None:
    r = gputui("snapshot", "--prometheus", fleet.url)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("gpu-")]
    assert len(rows) == 4 + 16  # the host table, then the GPU table (16 <= 64)
