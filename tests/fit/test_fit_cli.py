"""`gputui fit` end to end: catalog card, all cards, JSON schema, exit codes, defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.fit import paths
from tests.conftest import run_fit

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = str(ROOT / "examples" / "models.toml")


def test_rtx_3090_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_fit(capsys, EXAMPLES, "--gpu", "RTX 3090")
    assert code == 0
    assert "GeForce RTX 3090" in out
    assert "recommended: amp_bf16" in out  # Ampere
    for name in ("mnist-cnn", "vgg16", "mnist-gan", "bilstm-tagger"):
        assert f"{name}:" in out


def test_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_fit(capsys, EXAMPLES, "--gpu", "RTX 3090", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["schema_version"] == 3 and data["mode"] == "check"
    assert data["all_fit"] is True
    names = [m["name"] for m in data["models"]]
    assert "vgg16" in names
    vgg = data["models"][names.index("vgg16")]
    assert vgg["kind"] == "graph" and vgg["model"]["type"] == "sequential"
    assert vgg["model"]["params"] == 138_357_544
    assert vgg["model"]["trainable_params"] == 138_357_544
    assert vgg["workload"]["mode"] == "train" and vgg["workload"]["batch_size"] == 32
    (on_3090,) = vgg["estimates"]  # one per GPU checked
    assert on_3090["recommended_precision"] == on_3090["precision"] == "amp_bf16"
    assert len(vgg["model"]["layers"]) == 22
    for e in on_3090["precisions"]:
        assert set(e["breakdown"]) >= {
            "weights",
            "gradients",
            "optimizer_state",
            "activations",
            "workspace",
            "cuda_context",
        }
        assert e["peak_bytes"] == sum(e["breakdown"].values())
        assert isinstance(e["fits"], bool) and e["max_batch_size"] >= 0
    precisions = {e["precision"] for e in on_3090["precisions"]}
    # amp_fp8 (Transformer Engine training) is listed everywhere, offered on Ada and later
    assert precisions == {"fp32", "tf32", "amp_fp16", "amp_bf16", "amp_fp8", "bf16", "fp16"}


def test_does_not_fit_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_fit(
        capsys, EXAMPLES, "--gpu", "Tesla T4", "--model", "vgg16", "--batch-size", "4096"
    )
    assert code == 1
    assert "does not fit" in out


def test_all_cards_ranks_fitting_cards_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_fit(capsys, EXAMPLES, "--all-cards", "--model", "vgg16", "--json")
    assert code == 0
    (entry,) = json.loads(out)["models"]
    assert entry["estimates"] is None
    cards = entry["ranking"]
    assert len(cards) > 10
    fits = [c["fits"] for c in cards]
    assert fits == sorted(fits, reverse=True)
    # An unknown speed is placed by its floor (a rate the card is sure to reach), not as 0.
    speeds = [c["throughput"] or c["throughput_floor"] or 0 for c in cards if c["fits"]]
    assert speeds == sorted(speeds, reverse=True)


def test_no_gpu_without_card_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputui.sources import base as source

    def unavailable(*_a: object, **_k: object) -> None:
        raise source.SourceUnavailable("NVML library not found")

    monkeypatch.setattr(source, "open_source", unavailable)
    code, _, err = run_fit(capsys, EXAMPLES)
    assert code == 2
    assert err.count("\n") == 1
    assert "--gpu NAME" in err and "--all-cards" in err


def test_inference_precision_rejected_for_training_models(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_fit(capsys, EXAMPLES, "--gpu", "H100 SXM", "--precision", "fp8")
    assert code == 2 and "inference only" in err


def test_default_models_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "config" / "models.toml"
    monkeypatch.setattr(paths, "user_models_file", lambda: user)
    path, origin = paths.resolve_models_path(None, cwd=tmp_path)
    assert origin == "shipped examples" and path == paths.shipped_examples()
    user.parent.mkdir()
    user.write_text("")
    assert paths.resolve_models_path(None, cwd=tmp_path) == (user, "user config")
    (tmp_path / "gputui.toml").write_text("")
    assert paths.resolve_models_path(None, cwd=tmp_path)[1] == "./gputui.toml"


def test_shipped_examples_are_labelled(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(paths, "user_models_file", lambda: tmp_path / "none.toml")
    code, out, _ = run_fit(capsys, "--gpu", "A100 SXM4 80 GB", "--model", "mnist-cnn")
    assert code == 0
    assert "(shipped examples)" in out.splitlines()[0]


class FakeSource:
    name = "nvml"

    def __init__(self, free: int) -> None:
        self.free = free

    def poll(self):  # type: ignore[no-untyped-def]
        from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot, Snapshot

        total = 24 * 2**30
        info = DeviceInfo(
            0, "NVIDIA GeForce RTX 3090", memory_total=total, compute_capability="8.6"
        )
        sample = DeviceSample(
            memory_total=total, memory_free=self.free, memory_used=total - self.free
        )
        return Snapshot(0.0, "nvml", (DeviceSnapshot(info, sample),))

    def close(self) -> None:
        pass


@pytest.mark.parametrize(("free_gib", "code"), [(20, 0), (1, 1)])
def test_installed_gpu_uses_free_memory(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, free_gib: int, code: int
) -> None:
    from gputui.sources import base as source

    monkeypatch.setattr(source, "open_source", lambda *a, **k: (FakeSource(free_gib * 2**30), None))
    rc, out, _ = run_fit(capsys, EXAMPLES, "--model", "vgg16", "--json")
    assert rc == code
    (entry,) = json.loads(out)["models"]
    (chosen,) = entry["estimates"]  # the recommended precision's answer on the one GPU
    assert chosen["gpu"]["catalog_card"] == "GeForce RTX 3090"
    assert chosen["gpu"]["memory_free_bytes"] == free_gib * 2**30
    assert chosen["precision"] == chosen["recommended_precision"]
    assert chosen["verdict"] == "fits"  # 24 GiB in total
    assert (chosen["verdict_free"] == "does not fit") == (free_gib == 1)
    assert chosen["max_batch_size_free"] < chosen["max_batch_size"]


def test_index_out_of_range(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputui.sources import base as source

    monkeypatch.setattr(source, "open_source", lambda *a, **k: (FakeSource(2**30), None))
    rc, _, err = run_fit(capsys, EXAMPLES, "--index", "3")
    assert rc == 2 and "--index 3: no such GPU" in err
