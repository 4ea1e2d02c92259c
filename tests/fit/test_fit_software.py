"""Users say how their framework runs the model (`memory_format`, `optimizer_impl` in the
models file; `--memory-format`, `--optimizer-impl` on the command line) and the speed
estimate follows: channels-last saves the NCHW<->NHWC transposes around tensor-core
convolutions, a fused optimizer its extra passes over the state. Driven through
`gputui fit` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import main

ROOT = Path(__file__).resolve().parents[2]
GPT2 = str(ROOT / "examples" / "llm" / "gpt2.json")
TENSOR_CARD = "A100 SXM4 80 GB"  # bf16/fp16 tensor cores
CUDA_CORE_CARD = "GeForce GTX 1080"  # Pascal: no tensor cores

# channel counts that are multiples of 8, so 16-bit convolutions take the tensor cores
CONVNET = """
[[model]]
name = "convnet"
input_shape = [32, 32, 16]
batch_size = 64
optimizer = "adamw"
mode = "{mode}"
{extra}
layers = [
  {{ type = "Conv2D", filters = 64, kernel_size = 3, padding = "same", activation = "relu" }},
  {{ type = "Conv2D", filters = 64, kernel_size = 3, padding = "same", activation = "relu" }},
  {{ type = "MaxPooling2D", pool_size = 2 }},
  {{ type = "Conv2D", filters = 128, kernel_size = 3, padding = "same", activation = "relu" }},
  {{ type = "GlobalAveragePooling2D" }},
  {{ type = "Dense", units = 10 }},
]
"""


def models_file(tmp_path: Path, extra: str = "", mode: str = "train") -> str:
    """A conv net's models file; each variant its own file (a name from its settings)."""
    tag = "".join(c for c in extra + mode if c.isalnum())
    path = tmp_path / f"models-{tag}.toml"
    path.write_text(CONVNET.format(extra=extra, mode=mode))
    return str(path)


def fit_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(["fit", *argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    result: dict[str, Any] = json.loads(out)
    return result


def model_entry(
    capsys: pytest.CaptureFixture[str], path: str, card: str, precision: str, *flags: str
) -> dict[str, Any]:
    data = fit_json(capsys, path, "--gpu", card, "--precision", precision, *flags)
    (entry,) = data["models"]
    assert isinstance(entry, dict)
    return entry


def samples_per_s(entry: dict[str, Any]) -> float:
    (est,) = entry["estimates"]
    value = est["speed"]["samples_per_s"]
    assert isinstance(value, float) and value > 0
    return value


def error_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["fit", *argv]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_channels_last_is_faster_for_a_conv_net_in_amp_on_tensor_cores(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = models_file(tmp_path)
    nchw = model_entry(capsys, path, TENSOR_CARD, "amp_bf16")
    nhwc = model_entry(capsys, path, TENSOR_CARD, "amp_bf16", "--memory-format", "channels_last")
    assert nchw["workload"]["software"]["memory_format"] == "channels_first"  # PyTorch's default
    assert nhwc["workload"]["software"]["memory_format"] == "channels_last"
    # the transposes are memory traffic around every conv call: a real share, not noise
    assert samples_per_s(nhwc) > 1.05 * samples_per_s(nchw)


@pytest.mark.parametrize(
    ("card", "precision"),
    [
        (CUDA_CORE_CARD, "amp_fp16"),  # no tensor cores: cuDNN runs NCHW natively
        (TENSOR_CARD, "fp32"),  # fp32 convolutions stay on the CUDA cores
    ],
)
def test_channels_last_changes_nothing_where_no_tensor_core_conv_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, card: str, precision: str
) -> None:
    path = models_file(tmp_path)
    nchw = model_entry(capsys, path, card, precision, "--memory-format", "channels_first")
    nhwc = model_entry(capsys, path, card, precision, "--memory-format", "channels_last")
    assert samples_per_s(nhwc) == pytest.approx(samples_per_s(nchw), rel=1e-12)


def test_pytorch_contiguous_format_is_channels_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = models_file(tmp_path, 'memory_format = "contiguous_format"')
    entry = model_entry(capsys, path, TENSOR_CARD, "amp_bf16")
    assert entry["workload"]["software"]["memory_format"] == "channels_first"
    default = model_entry(capsys, models_file(tmp_path), TENSOR_CARD, "amp_bf16")
    assert samples_per_s(entry) == samples_per_s(default)


def test_fused_optimizer_is_faster_than_foreach_for_a_training_step(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = models_file(tmp_path)
    speeds = {
        impl: samples_per_s(
            model_entry(capsys, path, TENSOR_CARD, "amp_bf16", "--optimizer-impl", impl)
        )
        for impl in ("foreach", "fused", "loop")
    }
    assert speeds["fused"] > speeds["foreach"]
    # a per-tensor loop launches every foreach op once per tensor: slower still
    assert speeds["loop"] < speeds["foreach"]
    default = model_entry(capsys, path, TENSOR_CARD, "amp_bf16")
    assert default["workload"]["software"]["optimizer_impl"] == "foreach"
    assert samples_per_s(default) == speeds["foreach"]


def test_optimizer_impl_does_not_change_inference(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # accepted in the file (a --mode train may flip it), priced only when a step trains
    fused = model_entry(
        capsys, models_file(tmp_path, 'optimizer_impl = "fused"', "inference"), TENSOR_CARD, "bf16"
    )
    plain = model_entry(capsys, models_file(tmp_path, mode="inference"), TENSOR_CARD, "bf16")
    assert samples_per_s(fused) == samples_per_s(plain)
    assert fused["workload"]["software"] == {
        "memory_format": "channels_first",
        "optimizer_impl": None,
    }


def test_the_flag_overrides_the_file_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    keyed = models_file(tmp_path, 'memory_format = "channels_last"\noptimizer_impl = "fused"')
    from_file = model_entry(capsys, keyed, TENSOR_CARD, "amp_bf16")
    assert from_file["workload"]["software"] == {
        "memory_format": "channels_last",
        "optimizer_impl": "fused",
    }
    flagged = model_entry(
        capsys,
        keyed,
        TENSOR_CARD,
        "amp_bf16",
        "--memory-format",
        "channels_first",
        "--optimizer-impl",
        "foreach",
    )
    assert flagged["workload"]["software"] == {
        "memory_format": "channels_first",
        "optimizer_impl": "foreach",
    }
    plain = model_entry(capsys, models_file(tmp_path), TENSOR_CARD, "amp_bf16")
    assert samples_per_s(flagged) == samples_per_s(plain) < samples_per_s(from_file)
    # one flag leaves the other key as the file has it
    half = model_entry(capsys, keyed, TENSOR_CARD, "amp_bf16", "--optimizer-impl", "loop")
    assert half["workload"]["software"] == {
        "memory_format": "channels_last",
        "optimizer_impl": "loop",
    }


def test_text_says_what_the_speed_assumed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = models_file(tmp_path, 'memory_format = "channels_last"')
    assert main(["fit", path, "--gpu", TENSOR_CARD, "--optimizer-impl", "fused"]) == 0
    out = capsys.readouterr().out
    assert "  speed assumes: NHWC (channels_last), fused optimizer" in out.splitlines()

    assert main(["fit", models_file(tmp_path, mode="inference"), "--gpu", TENSOR_CARD]) == 0
    out = capsys.readouterr().out
    assert "  speed assumes: NCHW (channels_first)" in out.splitlines()  # no optimizer


def test_a_model_without_convolutions_says_the_layout_does_not_matter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "mlp.toml"
    path.write_text(
        '[[model]]\nname = "mlp"\ninput_shape = [64]\n'
        'layers = [{ type = "Dense", units = 64 }, { type = "Dense", units = 10 }]\n'
    )
    assert main(["fit", str(path), "--gpu", TENSOR_CARD]) == 0
    out = capsys.readouterr().out
    assert "speed assumes: NCHW (channels_first) (no convolutions: no effect), foreach" in out


def test_all_cards_ranking_carries_the_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = models_file(tmp_path, 'optimizer_impl = "fused"')
    data = fit_json(capsys, path, "--all-cards", "--memory-format", "channels_last")
    (ranking,) = data["models"]
    assert ranking["workload"]["software"] == {
        "memory_format": "channels_last",
        "optimizer_impl": "fused",
    }
    assert main(["fit", path, "--all-cards"]) == 0
    assert "speed assumes: NCHW (channels_first), fused optimizer" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "field", "bad"),
    [
        ('memory_format = "nhwc"', "memory_format", "'nhwc'"),
        ("memory_format = 1", "memory_format", "1"),
        ('optimizer_impl = "apex"', "optimizer_impl", "'apex'"),
        ('optimizer_impl = "bertadam"', "optimizer_impl", "'bertadam'"),  # benchmarks only
    ],
)
def test_bad_file_values_give_one_line_naming_file_model_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: str, field: str, bad: str
) -> None:
    path = models_file(tmp_path, extra)
    line = error_line(capsys, path, "--gpu", TENSOR_CARD)
    assert line.startswith(f"gputui: {path}: model 'convnet': {field}: must be")
    assert line.endswith(f"got {bad}")


def test_keras_sidecar_takes_the_keys_and_checks_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    keras = ROOT / "tests" / "fixtures" / "keras" / "resnet50.json"
    path = tmp_path / "sidecar.toml"
    sidecar = f'[[model]]\nname = "k"\nkeras = "{keras}"\nbatch_size = 8\n'
    path.write_text(sidecar + 'memory_format = "channels_last"\noptimizer_impl = "loop"\n')
    entry = model_entry(capsys, str(path), TENSOR_CARD, "amp_bf16")
    assert entry["workload"]["software"] == {
        "memory_format": "channels_last",
        "optimizer_impl": "loop",
    }
    # the Keras file itself, with the flags
    direct = model_entry(
        capsys, str(keras), TENSOR_CARD, "amp_bf16", "--batch-size", "8",
        "--memory-format", "channels_last", "--optimizer-impl", "loop",
    )  # fmt: skip
    assert samples_per_s(direct) == samples_per_s(entry)
    path.write_text(sidecar + 'optimizer_impl = "apex"\n')
    line = error_line(capsys, str(path), "--gpu", TENSOR_CARD)
    assert "model 'k': optimizer_impl: must be" in line


def test_bad_flag_values_exit_2_naming_the_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for flag, value in (("--memory-format", "nhwc"), ("--optimizer-impl", "bertadam")):
        with pytest.raises(SystemExit) as exc:
            main(["fit", models_file(tmp_path), "--gpu", TENSOR_CARD, flag, value])
        assert exc.value.code == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"argument {flag}: invalid choice: '{value}'" in last


def test_flags_where_they_do_not_apply_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = models_file(tmp_path, mode="inference")
    line = error_line(capsys, path, "--gpu", TENSOR_CARD, "--optimizer-impl", "fused")
    assert "--optimizer-impl fused: only for training" in line
    # --mode train makes it apply
    assert (
        main(["fit", path, "--gpu", TENSOR_CARD, "--mode", "train", "--optimizer-impl", "fused"])
        == 0
    )
    capsys.readouterr()
    line = error_line(
        capsys, models_file(tmp_path), "--gpu", TENSOR_CARD, "--mode", "inference",
        "--optimizer-impl", "loop",
    )  # fmt: skip
    assert "--optimizer-impl loop: only for training" in line and "(--mode inference)" in line
    line = error_line(capsys, GPT2, "--gpu", TENSOR_CARD, "--memory-format", "channels_last")
    assert line.startswith("gputui: --memory-format channels_last: applies to layer models")
    line = error_line(capsys, GPT2, "--gpu", TENSOR_CARD, "--optimizer-impl", "fused")
    assert line == "gputui: --optimizer-impl: only with --mode train (mode is generate)"


def test_transformer_training_takes_the_optimizer_impl(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def train(*flags: str) -> tuple[float, dict[str, Any]]:
        data = fit_json(capsys, GPT2, "--gpu", TENSOR_CARD, "--mode", "train", *flags)
        (entry,) = data["models"]
        (est,) = entry["estimates"]
        return float(est["speed"]["train_tokens_per_s"]), entry["workload"]

    foreach, wl = train()
    assert wl["optimizer_impl"] == "foreach"
    fused, wl = train("--optimizer-impl", "fused")
    assert wl["optimizer_impl"] == "fused"
    loop, _ = train("--optimizer-impl", "loop")
    assert loop < foreach < fused


def test_transformer_table_key_and_flag_precedence(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "t.toml"
    table = (
        f'[[model]]\nname = "g"\nkind = "transformer"\nhf_config = "{GPT2}"\nmode = "train"\n'
        'optimizer_impl = "fused"\n'
    )
    path.write_text(table)
    (entry,) = fit_json(capsys, str(path), "--gpu", TENSOR_CARD)["models"]
    assert entry["workload"]["optimizer_impl"] == "fused"
    data = fit_json(capsys, str(path), "--gpu", TENSOR_CARD, "--optimizer-impl", "loop")
    assert data["models"][0]["workload"]["optimizer_impl"] == "loop"
    path.write_text(table.replace('"train"', '"generate"'))
    line = error_line(capsys, str(path), "--gpu", TENSOR_CARD)
    assert line.endswith('optimizer_impl: only with mode = "train" (mode is "generate")')
    path.write_text(table.replace('"fused"', '"apex"'))
    assert "optimizer_impl" in error_line(capsys, str(path), "--gpu", TENSOR_CARD)
    # only transformers chosen: the layer-model flag has nothing to apply to
    path.write_text(table)
    line = error_line(capsys, str(path), "--gpu", TENSOR_CARD, "--memory-format", "channels_last")
    assert "none of the models chosen is one" in line
