"""compressed-tensors checkpoints (llm-compressor's W4A16 and kin): the weights' bytes from the
scheme's own bits, group size, zero points and `ignore`; a scheme gputui does not know is
refused rather than sized as something else."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import main
from gputui.core.errors import UserError
from gputui.fit.importers.hf import load_path
from gputui.fit.transformer.formats import weight_format
from gputui.fit.transformer.weights import weight_bytes

ROOT = Path(__file__).resolve().parents[3]
LLAMA3 = json.loads((ROOT / "examples/llm/llama-3-8b.json").read_text())
GiB = 1 << 30

# RedHatAI/Meta-Llama-3-8B-Instruct-quantized.w4a16's quantization_config, trimmed
W4A16: dict[str, Any] = {
    "quant_method": "compressed-tensors",
    "format": "pack-quantized",
    "quantization_status": "compressed",
    "ignore": ["lm_head"],
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "input_activations": None,
            "output_activations": None,
            "weights": {
                "num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                "group_size": 128, "dynamic": False, "actorder": None,
            },
        }
    },
}  # fmt: skip


def quantized(change: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    q = copy.deepcopy(W4A16)
    q["config_groups"]["group_0"]["weights"].update(change or {})
    q.update(top)
    return {**LLAMA3, "quantization_config": q}


def llama3_bytes(bits_per_linear_weight: float, per_row_bytes: float = 0) -> float:
    """Llama-3-8B's weights from its config: the block linears in the scheme, the rest bf16."""
    h, layers, inter = (
        LLAMA3["hidden_size"],
        LLAMA3["num_hidden_layers"],
        LLAMA3["intermediate_size"],
    )
    kv = LLAMA3["num_key_value_heads"] * LLAMA3["head_dim"]
    # q, k, v, o and gate, up, down as (inputs, outputs)
    linears = [(h, h), (h, kv), (h, kv), (h, h), (h, inter), (h, inter), (inter, h)]
    per_layer = sum(i * o * bits_per_linear_weight / 8 + o * per_row_bytes for i, o in linears)
    embedding_and_head = 2 * LLAMA3["vocab_size"] * h * 2  # untied, bf16
    norms = (2 * layers + 1) * h * 2
    return layers * per_layer + embedding_and_head + norms


def weights_of(tmp_path: Path, config: dict[str, Any]) -> int:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    model = load_path(path)
    return weight_bytes(model.layout, weight_format(model.default_weights))


def test_w4a16_is_four_bits_and_a_16_bit_scale_per_group_of_128(tmp_path: Path) -> None:
    expected = llama3_bytes(4 + 16 / 128)
    assert weights_of(tmp_path, quantized()) == pytest.approx(expected, abs=1)
    assert 5.2 * GiB < expected < 5.4 * GiB  # the checkpoint's own files hold about 5.7 GB


def test_the_cli_prints_the_w4a16_weights(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(quantized()))
    rc = main(["fit", str(path), "--gpu", "RTX 4090", "--seq-len", "1024"])
    out = capsys.readouterr().out
    assert rc in (0, 1) and f"weights {llama3_bytes(4 + 16 / 128) / GiB:.2f} GiB" in out, out


def test_asymmetric_groups_add_a_packed_zero_point_per_group(tmp_path: Path) -> None:
    config = quantized({"symmetric": False, "group_size": 32})
    expected = llama3_bytes(4 + (16 + 4) / 32)
    assert weights_of(tmp_path, config) == pytest.approx(expected, abs=1)


def test_per_channel_int8_adds_a_scale_per_output_row(tmp_path: Path) -> None:
    config = quantized({"num_bits": 8, "strategy": "channel", "group_size": None})
    assert weights_of(tmp_path, config) == pytest.approx(llama3_bytes(8, 2), abs=1)


def test_group_act_order_keeps_an_int32_index_per_input(tmp_path: Path) -> None:
    plain = weights_of(tmp_path, quantized())
    ordered = weights_of(tmp_path, quantized({"actorder": "group"}))
    h, inter = LLAMA3["hidden_size"], LLAMA3["intermediate_size"]
    inputs = 6 * h + inter  # q, k, v, o, gate, up read h inputs; down reads inter
    assert ordered - plain == pytest.approx(LLAMA3["num_hidden_layers"] * inputs * 4, abs=2)


def test_fp8_and_nvfp4_schemes(tmp_path: Path) -> None:
    fp8 = quantized(
        {"num_bits": 8, "type": "float", "strategy": "channel"}, format="float-quantized"
    )
    assert weights_of(tmp_path, fp8) == pytest.approx(llama3_bytes(8), abs=1)
    nvfp4 = quantized(
        {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
        format="nvfp4-pack-quantized",
    )
    assert weights_of(tmp_path, nvfp4) == pytest.approx(llama3_bytes(4 + 8 / 16), abs=1)


def test_ignoring_what_stays_16_bit_anyway_changes_nothing(tmp_path: Path) -> None:
    config = quantized(
        ignore=["lm_head", "re:.*mlp.gate$", "re:vision_tower.*", "model.layers.0.mlp.gate"]
    )
    assert weights_of(tmp_path, config) == weights_of(tmp_path, quantized())


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (quantized({"strategy": "block"}), "unsupported compressed-tensors scheme: int 4-bit"),
        (quantized({"num_bits": 6}), "unsupported compressed-tensors scheme"),
        (quantized({"type": "float", "group_size": 32}), "unsupported compressed-tensors scheme"),
        (quantized(format="naive-quantized"), "unsupported compressed-tensors scheme"),
        (quantized(format="marlin-24"), "format: unsupported compressed-tensors format"),
        (quantized({"num_bits": None}), "num_bits: is required"),
        (quantized({"group_size": 1 << 40}), "weights.group_size"),
        (
            quantized(ignore=["model.layers.0.mlp.down_proj"]),
            "ignore: 'model.layers.0.mlp.down_proj' leaves a linear of the blocks unquantized",
        ),
        (quantized(ignore=["re:.*mlp.gate"]), "ignore: 're:.*mlp.gate' leaves a linear"),
        (quantized(ignore=["re:lm_head|.*q_proj"]), "leaves a linear of the blocks"),
        (quantized(ignore="lm_head"), "ignore: must be a list"),
        (quantized(config_groups={}), "config_groups: must be a table of 1 to 64"),
    ],
)
def test_a_scheme_not_known_is_refused_in_one_line(
    tmp_path: Path, config: dict[str, Any], message: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(UserError) as err:
        load_path(path)
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert "quantization_config." in str(err.value)


def test_mixed_and_partial_schemes_are_refused(tmp_path: Path) -> None:
    mixed = quantized()
    groups = mixed["quantization_config"]["config_groups"]
    groups["group_1"] = copy.deepcopy(groups["group_0"])
    groups["group_1"]["weights"]["num_bits"] = 8
    groups["group_1"]["targets"] = ["re:.*self_attn.*"]
    partial = quantized()
    partial["quantization_config"]["config_groups"]["group_0"]["targets"] = ["re:.*mlp.*"]
    for config, message in ((mixed, "mixes ct-int4-g128, ct-int8-g128"), (partial, "Linear")):
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        with pytest.raises(UserError, match=message):
            load_path(path)
