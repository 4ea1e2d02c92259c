"""The fleet is one path for every model kind: each model, whatever describes it, is asked
of `check(FitRequest)` once per distinct GPU key and answered in one shape.

The fleet here is built in memory (no Prometheus: tests/commands/test_fit_fleet_*.py read
a real one): two H100s with the same free memory and a third with less, an A100 40GB with
500 MiB free, and an A100 80GB in MIG mode (three instances).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from gputui.fit import FitRequest, ModelSpec, TransformerSpec, load_any
from gputui.fit.fleet import FleetModel, answer_fleet
from gputui.fit.report.fleet import render_json, render_text
from gputui.model.cluster import ClusterGpu, ClusterHost, ClusterSnapshot, MigReading
from gputui.model.snapshot import DeviceSample

ROOT = Path(__file__).resolve().parents[2]
KERAS = ROOT / "tests" / "fixtures" / "keras" / "mnist_convnet.json"
MiB = 1 << 20


def _gpu(host: str, index: int, name: str, total_mib: int, used_mib: int) -> ClusterGpu:
    sample = DeviceSample(
        memory_used=used_mib * MiB,
        memory_free=(total_mib - used_mib) * MiB,
        memory_total=total_mib * MiB,
    )
    return ClusterGpu(host, index, name, None, None, sample, True, 1.0)


CLUSTER = ClusterSnapshot(
    100.0,
    "http://prometheus:9090",
    (
        ClusterHost(
            "h100-a",
            tuple(_gpu("h100-a", i, "NVIDIA H100 80GB HBM3", 81559, 4096) for i in range(2)),
        ),
        ClusterHost("h100-c", (_gpu("h100-c", 0, "NVIDIA H100 80GB HBM3", 81559, 60000),)),
        ClusterHost("a100-b", (_gpu("a100-b", 0, "NVIDIA A100-SXM4-40GB", 40960, 40460),)),
        ClusterHost("mig-1", (_gpu("mig-1", 0, "NVIDIA A100-SXM4-80GB", 81920, 38144),)),
    ),
)
MIG = {
    ("mig-1", 0): [
        MigReading("mig-1", 0, 1, "3g.40gb", 16192 * MiB, 24000 * MiB),
        MigReading("mig-1", 0, 2, "2g.20gb", 7680 * MiB, 12288 * MiB),
        MigReading("mig-1", 0, 3, "1g.10gb", 7936 * MiB, 2048 * MiB),
    ]
}
GPUS = 3 + 1 + 3  # a MIG instance is a candidate of its own, never the card
KEYS = 2 + 1 + 3  # two of the H100s share card and free memory
CARDS = 1 + 1 + 3  # the H100s, the A100 40GB, the MIG profiles


def _models() -> list[FleetModel]:
    """A layer model (models TOML), a Keras file and a transformer (HF config), each as
    the request the local `fit` would make: the fleet gets no other word of their kind."""
    (mnist,) = [m for m in load_any(ROOT / "examples" / "models.toml") if m.name == "mnist-cnn"]
    (keras,) = load_any(KERAS)
    (gpt2,) = load_any(ROOT / "examples" / "llm" / "gpt2.json")
    assert isinstance(mnist, ModelSpec) and isinstance(keras, ModelSpec)
    assert isinstance(gpt2, TransformerSpec)
    return [FleetModel(m.name, FitRequest(m)) for m in (mnist, keras, gpt2)]


@pytest.fixture(scope="module")
def fleet_json() -> dict[str, Any]:
    answer = answer_fleet(CLUSTER, MIG, _models())
    return dict(json.loads(render_json({"mode": "fleet"}, answer, every=True)))


def _keys(entry: dict[str, Any]) -> tuple[frozenset[str], ...]:
    return (
        frozenset(entry),
        *(frozenset(g) for g in entry["groups"]),
        *(frozenset(g) for g in entry["gpus"]),
    )


def test_every_kind_goes_through_check_once_per_key(monkeypatch: pytest.MonkeyPatch) -> None:
    import gputui.fit.entry as entry

    asked: list[tuple[str, int | None]] = []
    real = entry.check

    def counting(request: Any) -> Any:
        asked.extend((request.model.name, t.memory_free) for t in request.targets)
        return real(request)

    monkeypatch.setattr(entry, "check", counting)
    answer = answer_fleet(CLUSTER, MIG, _models())
    names = [r.model.name for r in answer.models]
    assert sorted(asked) == sorted({(n, f) for n, f in asked})  # never a key twice
    for name in names:  # one engine call per distinct key, for every kind
        assert sum(1 for n, _ in asked if n == name) == KEYS
    assert [len(r.ranking) for r in answer.models] == [GPUS] * 3


def test_every_kind_has_the_same_keys(fleet_json: dict[str, Any]) -> None:
    """A layer model, a Keras file and a transformer: one entry shape, one group shape and
    one GPU shape; a kind's own facts are null where the kind has none."""
    entries = fleet_json["fleet"]
    assert [e["kind"] for e in entries] == ["graph", "graph", "transformer"]
    shapes = [_keys(e) for e in entries]
    assert {s[0] for s in shapes} == {shapes[0][0]}  # the entries
    assert len({k for s in shapes for k in s[1:]} - {shapes[0][0]}) == 2  # groups, GPUs
    graph, _, transformer = entries
    assert graph["transformer"] is None and graph["workload"] is None
    assert transformer["transformer"]["name"] and transformer["workload"]["mode"]
    assert {g["longest_seq_len_free"] for g in graph["gpus"]} == {None}
    assert all(isinstance(g["longest_seq_len_free"], int) for g in transformer["gpus"])
    for e in entries:
        assert e["gpus_total"] == len(e["gpus"]) == GPUS
        assert all(isinstance(g["precision"], str) for g in e["gpus"])
        assert all(isinstance(g["batch_size"], int) for g in e["gpus"])


def test_the_fleet_precision_is_the_local_checks(fleet_json: dict[str, Any]) -> None:
    """The precision the local `fit` chooses for a card (here the fastest computed that
    fits: fp32, the step being launch-bound) is the fleet's on that card; the fleet once
    put the architecture's default (amp_bf16) over it."""
    out = io.StringIO()
    from gputui.cli import main

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["fit", str(KERAS), "--gpu", "H100 SXM5 80GB", "--json"]) in (0, 1)
    (local,) = json.loads(out.getvalue())["models"][0]["estimates"]
    keras = fleet_json["fleet"][1]
    h100 = [g for g in keras["gpus"] if g["host"] == "h100-a"]
    assert {g["precision"] for g in h100} == {local["recommended_precision"]} == {"fp32"}


def test_text_has_one_line_builder_for_every_kind() -> None:
    text = render_text(answer_fleet(CLUSTER, MIG, _models()), every=False)
    assert "mnist-cnn (train, batch 128): fits now on" in text
    assert "gpt2 (transformer): fits now on" in text
    rows = [line for line in text.splitlines() if line[:6].strip().rstrip(".").isdigit()]
    assert len(rows) == 3 * GPUS
    seq = [line for line in rows if "longest seq now" in line]
    assert len(seq) == GPUS  # the transformer's rows, and only those


def test_the_precision_is_chosen_once_per_card(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check's own choice of precision reads the card, never its free memory: the fleet
    asks for it once per card, and the other keys of the card get the same answer as a
    check of their own would give."""
    import gputui.fit.entry as entry

    real = entry.check
    choosing: list[str] = []

    def counting(request: Any) -> Any:
        if request.targets and request.precision is None:
            choosing.append(request.model.name)
        return real(request)

    monkeypatch.setattr(entry, "check", counting)
    models = _models()
    answer = answer_fleet(CLUSTER, MIG, models)
    mnist = answer.models[0]
    assert choosing.count("mnist-cnn") == CARDS < KEYS
    for fit in mnist.ranking:
        (own,) = real(FitRequest(models[0].request.model, (fit.target,))).checks
        assert fit.answer.precision == own.recommended
        assert fit.answer.peak_bytes == own.chosen.peak_bytes
        assert fit.answer.max_batch_free == own.chosen.max_batch_size_free
