"""`gputui fit --torch`: the user's module traced on fake tensors, judged by the one engine
(skipped without torch; CI sets GPUTUI_REQUIRE_TORCH=1 so a skip fails there).

Small modules only: each check traces a step at two batch sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_fit
from tests.torch_required import require_torch

require_torch()

ROOT = Path(__file__).resolve().parents[2]
RESNET = ROOT / "examples" / "torch" / "resnet.py"

MLP = """\
import torch
from torch import nn


def build():
    return nn.Sequential(nn.Linear(1000, 500), nn.ReLU(), nn.Linear(500, 10))


def half_frozen():
    m = build()
    for p in m[0].parameters():
        p.requires_grad = False
    return m


def broken():
    raise ValueError("no such layer size")
"""


@pytest.fixture
def mlp(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.py"
    path.write_text(MLP)
    return path


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    code, out, err = run_fit(capsys, *argv, "--json")
    assert code in (0, 1), err
    return json.loads(out)  # type: ignore[no-any-return]


def _chosen(doc: dict) -> dict:  # type: ignore[type-arg]
    return doc["models"][0]["estimates"][0]  # type: ignore[no-any-return]


def test_inference_peak_is_the_weights_the_batch_and_the_largest_activation(
    capsys: pytest.CaptureFixture[str], mlp: Path
) -> None:
    doc = _json(capsys, "--torch", f"{mlp}:build", "--input-shape", "1000", "--mode", "inference",
                "--batch-size", "64", "--precision", "fp32", "--device", "cpu", "--gpu", "RTX 4090")  # fmt: skip
    b = _chosen(doc)["breakdown"]
    weights = (1000 * 500 + 500 + 500 * 10 + 10) * 4
    assert b["weights"] == weights
    # no_grad: at the first Linear's output, the batch (64x1000) and its output (64x500)
    # are alive; the ReLU output replaces the first (in-place it is not): batch + 2x500
    assert b["activations"] == 64 * (1000 + 500 + 500) * 4
    assert b["cuda_context"] == 0 and b["allocator"] == 0


def test_frozen_parameters_get_no_gradient_nor_optimizer_state(
    capsys: pytest.CaptureFixture[str], mlp: Path
) -> None:
    from gputui.fit import TorchSpec, parse_input_shape, traced_model
    from gputui.fit.core.precision import policy

    doc = _json(capsys, "--torch", f"{mlp}:half_frozen", "--input-shape", "1000",
                "--batch-size", "16", "--precision", "fp32", "--device", "cpu",
                "--gpu", "RTX 4090")  # fmt: skip
    trainable = 500 * 10 + 10
    facts = doc["models"][0]["model"]
    assert facts["trainable_params"] == trainable and facts["params"] == 505_510
    spec = TorchSpec("m", f"{mlp}:half_frozen", (parse_input_shape("1000"),), batch_size=16)
    phases = traced_model(spec, "cpu").phases(policy("fp32"), "cpu")
    step = phases[-1]  # the optimizer's last op: every gradient and all the state alive
    assert step.name.startswith("optimizer")
    assert step.fixed.gradients == trainable * 4 and step.per_sample.gradients == 0
    # Adam: exp_avg and exp_avg_sq per parameter, and a 4-byte step count per tensor
    assert step.fixed.optimizer_state == 2 * trainable * 4 + 2 * 4


def test_cuda_target_rounds_blocks_and_adds_the_device_overhead_apart(
    capsys: pytest.CaptureFixture[str], mlp: Path
) -> None:
    args = ("--torch", f"{mlp}:build", "--input-shape", "1000", "--mode", "inference",
            "--batch-size", "64", "--precision", "fp32", "--gpu", "RTX 4090")  # fmt: skip
    cuda = _chosen(_json(capsys, *args))["breakdown"]
    cpu = _chosen(_json(capsys, *args, "--device", "cpu"))["breakdown"]
    # the caching allocator's 512-byte blocks: 2,000,000 + 2,000 + 20,000 + 40 bytes
    assert cpu["weights"] == 2_022_040
    assert cuda["weights"] == 3907 * 512 + 4 * 512 + 40 * 512 + 512
    assert cuda["cuda_context"] > 0 and cuda["workspace"] > cpu["workspace"]


def test_resnet_with_inputs_and_loss_names_the_loss_and_ranks_every_card(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json(capsys, "--torch", f"{RESNET}:build_small", "--inputs",
                f"{RESNET}:small_inputs", "--loss", f"{RESNET}:loss", "--batch-size", "8",
                "--precision", "fp32", "--all-cards")  # fmt: skip
    model = doc["models"][0]
    assert model["model"]["torch"]["loss"] == "--loss"
    ranked = model["ranking"]
    assert len(ranked) > 20 and ranked[0]["fits"]
    keras = _json(capsys, str(ROOT / "tests" / "fixtures" / "keras" / "mnist_convnet.json"),
                  "--precision", "fp32", "--all-cards")["models"][0]["ranking"][0]  # fmt: skip
    assert sorted(ranked[0]) == sorted(keras)  # the one ranking row, whatever the kind


def test_an_exception_in_the_users_code_is_one_line_naming_their_file(
    capsys: pytest.CaptureFixture[str], mlp: Path
) -> None:
    code, out, err = run_fit(capsys, "--torch", f"{mlp}:broken", "--input-shape", "1000",
                             "--gpu", "RTX 4090")  # fmt: skip
    assert code == 2 and out == ""
    assert f"{mlp}:17" in err and "ValueError: no such layer size" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_module_name_is_never_found_in_the_current_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "localmodels.py").write_text(MLP)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run_fit(capsys, "--torch", "localmodels:build", "--input-shape", "1000",
                           "--gpu", "RTX 4090")  # fmt: skip
    assert code == 2 and "current directory is not searched" in err
    code, _, err = run_fit(capsys, "--torch", "localmodels.py:build", "--input-shape", "1000",
                           "--gpu", "RTX 4090", "--precision", "fp32", "--mode", "inference")  # fmt: skip
    assert code == 0, err


def test_without_torch_one_line_says_how_to_install_it(
    capsys: pytest.CaptureFixture[str], mlp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gputui.fit.torch.build as build

    monkeypatch.setattr(build, "torch_available", lambda: False)
    code, _, err = run_fit(capsys, "--torch", f"{mlp}:build", "--input-shape", "1000")
    assert code == 2 and err.strip().endswith("pip install 'gputui[torch]'")


BRANCHY = """\
import torch
from torch import nn


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(100, 100)

    def forward(self, x):
        if x.shape[0] < 12:  # small batches take a path of their own
            x = x * 2
        return self.lin(x)


def build():
    return Branchy()
"""


def test_memory_not_affine_in_the_batch_is_traced_again_and_said(tmp_path: Path) -> None:
    from gputui.fit import TorchSpec, parse_input_shape, traced_model
    from gputui.fit.core.precision import policy

    path = tmp_path / "branchy.py"
    path.write_text(BRANCHY)
    spec = TorchSpec("b", f"{path}:build", (parse_input_shape("100"),), mode="inference",
                     batch_size=8)  # fmt: skip
    model = traced_model(spec, "cpu")
    model.phases(policy("fp32"), "cpu")
    # batch 8 takes the extra op, 16 does not: fitted on 16 and 32, and said
    assert model.traced("fp32", "cpu").batches == (16, 32)
    assert any("not affine in the batch between 8 and 16" in w for w in model.warnings)
