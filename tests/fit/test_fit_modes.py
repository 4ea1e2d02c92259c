"""--mode inference is a forward without labels; --mode eval the forward with labels and loss.

The figures are worked by hand from what each op keeps alive under torch.no_grad
(see fit/transformer/head.py and fit/graph/eval_loss.py), and checked against CPU measurements in
benchmarks/llm_accuracy.py and benchmarks/fit_accuracy.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.fit.core.breakdown import peak_phase as peak
from gputui.fit.core.precision import policy
from gputui.fit.graph.memory import model_phases
from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.importers.modelsfile import ModelSpec, parse_models
from gputui.fit.transformer.estimate import memory
from gputui.fit.transformer.model import from_config
from gputui.fit.transformer.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
GPT2 = ROOT / "examples" / "llm" / "gpt2.json"


def gpt2_peak(mode: str, weights: str = "fp32") -> tuple[str, float, float]:
    m = from_config(from_hf_dict(json.loads(GPT2.read_text())), "gpt2", "test")
    wl = Workload(
        mode=mode,  # type: ignore[arg-type]
        batch_size=4,
        seq_len=512,
        precision="fp32",
        weights=weights,
        backend="cpu",
    )
    phase, parts = memory(m, wl).breakdown(4, 512)
    return phase, parts.activations, parts.weights


def test_inference_keeps_the_logits_in_the_model_dtype_and_nothing_of_a_loss() -> None:
    # GPT-2 small, b4 s512, fp32: the token ids (int64), the final norm's output
    # (768 floats) and the logits (50,257 floats) of each of the 2,048 positions
    phase, acts, weights = gpt2_peak("inference")
    tokens = 4 * 512
    assert phase == "logits"
    assert acts == tokens * (8 + 4 * 768 + 4 * 50257)
    # measured on CPU with transformers 5.24 (model(ids, use_cache=False) under no_grad):
    # 873.35 MiB, weights included
    assert (acts + weights) / 2**20 == pytest.approx(873.35, abs=0.01)


def test_eval_adds_the_log_softmax_and_the_shifted_labels() -> None:
    _, inf, _ = gpt2_peak("inference")
    phase, ev, _ = gpt2_peak("eval")
    tokens = 4 * 512
    assert phase == "logits and loss"
    # fp32 logits need no upcast; log-softmax writes one fp32 tensor of the logits'
    # shape; the labels are padded and the shifted slice copied (two int64 tensors)
    assert ev - inf == tokens * (4 * 50257 + 2 * 8)


def test_eval_upcasts_16_bit_logits_inference_keeps_them_16_bit() -> None:
    _, inf, _ = gpt2_peak("inference", "bf16")
    _, ev, _ = gpt2_peak("eval", "bf16")
    tokens = 4 * 512
    assert inf == tokens * (8 + 2 * 768 + 2 * 50257)
    assert ev - inf == tokens * (4 * 50257 + 4 * 50257 + 2 * 8)  # fp32 copy + log-softmax


def graph_model(mode: str) -> ModelSpec:
    text = (
        '[[model]]\nname = "t"\ninput_shape = [256]\noptimizer = "sgd"\n'
        f'mode = "{mode}"\nlayers = [ {{ type = "Dense", units = 1000 }} ]\n'
    )
    return parse_models(text)[0]


def test_graph_eval_runs_the_loss_on_the_output_after_the_forward() -> None:
    weights = (256 * 1000 + 1000) * 4
    infer = model_phases(graph_model("inference"), policy("fp32"), "cpu")
    ev = model_phases(graph_model("eval"), policy("fp32"), "cpu")
    assert [p.name for p in ev[:-1]] == [p.name for p in infer]
    loss = ev[-1]
    assert loss.name == "loss (eval)"
    # the batch (256 floats) and the output (1,000) are alive; the loss adds one fp32
    # tensor of the output's shape (log-softmax / the square), no upcast in fp32
    assert loss.at(8).total == weights + 8 * (256 * 4 + 1000 * 4 + 1000 * 4)
    assert peak(ev, 8)[0].name == "loss (eval)"
    assert peak(infer, 8)[1].total == weights + 8 * (256 * 4 + 1000 * 4)
    # pure bf16: the output is 16-bit, so `.float()` copies it before the loss
    bf = model_phases(graph_model("eval"), policy("bf16"), "cpu")[-1]
    assert bf.per_sample.activations == 256 * 2 + 1000 * 2 + 1000 * 4 + 1000 * 4


def test_cli_and_toml_accept_eval(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["fit", str(GPT2), "--mode", "eval", "--gpu", "T4", "--json"])
    (ev,) = json.loads(capsys.readouterr().out)["models"]
    code2 = main(["fit", str(GPT2), "--mode", "inference", "--gpu", "T4", "--json"])
    (inf,) = json.loads(capsys.readouterr().out)["models"]
    assert code in (0, 1) and code2 in (0, 1)
    assert ev["workload"]["mode"] == "eval" and inf["workload"]["mode"] == "inference"
    assert ev["estimates"][0]["peak_bytes"] > inf["estimates"][0]["peak_bytes"]
    main(["fit", str(GPT2), "--mode", "eval", "--gpu", "T4"])
    assert "eval (one forward with labels and loss)" in capsys.readouterr().out

    models = tmp_path / "models.toml"
    models.write_text(
        '[[model]]\nname = "d"\ninput_shape = [16]\nmode = "eval"\n'
        'layers = [ { type = "Dense", units = 4 } ]\n\n'
        '[[model]]\nname = "g"\nkind = "transformer"\nmode = "eval"\nseq_len = 128\n'
        'config = { model_type = "gpt2", n_embd = 64, n_layer = 2, n_head = 2, '
        "vocab_size = 1000, n_positions = 256 }\n"
    )
    assert main(["fit", str(models), "--gpu", "T4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # one entry per model, layer model or transformer, each with its workload's mode
    assert [(m["kind"], m["workload"]["mode"]) for m in out["models"]] == [
        ("graph", "eval"),
        ("transformer", "eval"),
    ]


def test_a_bad_mode_names_the_choices(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    models = tmp_path / "models.toml"
    models.write_text(
        '[[model]]\nname = "d"\ninput_shape = [16]\nmode = "score"\n'
        'layers = [ { type = "Dense", units = 4 } ]\n'
    )
    assert main(["fit", str(models), "--gpu", "T4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "mode" in err[0] and "train, inference, eval" in err[0]


def test_the_model_line_names_an_optimizer_only_for_training() -> None:
    """`--mode inference` printed "inference, adam": no optimizer runs outside training."""
    import contextlib
    import io

    models = Path(__file__).resolve().parents[2] / "examples" / "models.toml"
    heads = {}
    for mode in ("train", "inference", "eval"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["fit", str(models), "--gpu", "RTX 3090", "--mode", mode, "--model", "mnist-cnn"])
        heads[mode] = next(line for line in out.getvalue().splitlines() if "mnist-cnn:" in line)
    assert ", train, adam, batch" in heads["train"]
    for mode in ("inference", "eval"):
        assert f", {mode}, batch" in heads[mode] and "adam" not in heads[mode]
