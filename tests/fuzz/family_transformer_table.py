"""Fuzz family `transformer_table`: a models TOML whose `kind = "transformer"` table has one
to three keys replaced by a hostile value of any TOML type, through `load_models` and then
`gputui fit FILE --json`.

Judged by behaviour: a refusal is one clean line naming the file and a replaced key (or the
rule it broke); an accepted file must give valid JSON and exit 0 or 1.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import generators as gen

from gputui.fit.importers.transformer_table import KEYS as TABLE_KEYS

FAMILY = "transformer_table"
CONFIG = (
    '{ model_type = "llama", hidden_size = 256, num_hidden_layers = 2, num_attention_heads = 4, '
    "num_key_value_heads = 2, intermediate_size = 512, vocab_size = 1000 }"
)
KEYS = sorted(TABLE_KEYS)
WORDS = ["q_proj", "all-linear", "bf16", "nf4", "fp8", "ct-int4-g128", "train", "lora", "qlora",
         "generate", "sdpa", "fp16", "adamw", "llama", "\x1b[31m", "a\nb", "", " ", "x" * 5000]  # fmt: skip
SCALARS: list[Any] = [0, -1, 1, 2, 16, 4096, 2**31, 2**63, 10**400, -(10**400), 0.5, 1e308,
                      float("nan"), float("inf"), float("-inf"), True, False,
                      dt.date(1979, 5, 27)]  # fmt: skip


# values a real table holds, so that planted keys also combine into accepted files
PLAUSIBLE: dict[str, list[Any]] = {
    "batch_size": [1, 4, 64], "seq_len": [128, 1024, 8192], "new_tokens": [1, 64],
    "method": ["full", "lora", "qlora"], "precision": ["amp_bf16", "fp32", "bf16"],
    "weights": ["bf16", "nf4", "fp8", "ct-int4-g128", "ct-int8-channel-asym", "q4_k"],
    "optimizer": ["adamw", "sgd", "adamw_8bit"], "lora_rank": [8, 64],
    "lora_alpha": [16, 32.0, 1e-3], "lora_targets": [["q_proj", "v_proj"], ["all-linear"]],
    "grad_checkpointing": [True], "grad_accum": [1, 8], "attention": ["sdpa", "eager"],
    "kv_dtype": ["fp16", "fp8", "q8_0"], "paged_block": [16], "optimizer_impl": ["fused"],
    "allow_longer_context": [True, False], "name": ["other"], "kind": ["transformer"],
    "loop": ["plain", "trainer"], "engine": ["hf", "vllm", "llama.cpp"],
}  # fmt: skip


@dataclass
class Case:
    text: str
    planted: list[str] = field(default_factory=list)


def toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped as \\uXXXX."""
    body = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or c in '"\\\x7f' else c for c in text)
    return f'"{body}"'


def toml_value(value: Any) -> str:
    """`value` as a TOML inline value (a small writer: no TOML library needed)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    items = ", ".join(f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items())
    return "{ " + items + " }"


def hostile(rng: Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.35 or depth > 2:
        return rng.choice(SCALARS)
    if roll < 0.65:
        return rng.choice(WORDS)
    if roll < 0.8:
        return [hostile(rng, depth + 1) for _ in range(rng.choice((0, 1, 2, 5, 80)))]
    if roll < 0.9:
        return {rng.choice(["a", "model_type", "hidden_size"]): hostile(rng, depth + 1)}
    return [rng.choice(WORDS[:9]) for _ in range(rng.randint(1, 4))]  # plausible targets


def make_case(rng: Random) -> Case:
    table = {"name": '"m"', "kind": '"transformer"', "config": CONFIG}
    table["mode"] = toml_string(rng.choice(["train", "generate", "inference"]))
    planted = rng.sample(KEYS, rng.randint(1, 3))
    for key in planted:
        good = PLAUSIBLE.get(key)
        value = rng.choice(good) if good and rng.random() < 0.5 else hostile(rng)
        table[key] = toml_value(value)
    return Case("[[model]]\n" + "".join(f"{k} = {v}\n" for k, v in table.items()), planted)


def case_text(case: Case) -> str:
    return case.text


def run_case(case: Case, workdir: Path) -> gen.Outcome:
    from gputui.cli import main
    from gputui.core.errors import UserError
    from gputui.fit.importers.modelsfile import load_models

    path = workdir / "models.toml"
    path.write_text(case.text, encoding="utf-8")
    try:
        load_models(path)
    except UserError as exc:
        outcome = gen._rejected(exc)
        named = [*case.planted, "mode", "hf_config"]
        if outcome.kind == "rejected" and not any(
            f"{key}{sep}" in outcome.detail for key in named for sep in (":", ".", " =")
        ):
            return gen.Outcome(
                "wrong-accept", f"refusal names no planted key | {outcome.detail[:80]}"
            )
        if outcome.kind == "rejected" and len(outcome.detail) > 1600:
            return gen.Outcome("wrong-accept", f"refusal of {len(outcome.detail)} characters")
        return outcome
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["fit", str(path), "--gpu", "RTX 3090", "--json"])
    if code not in (0, 1):
        return gen.Outcome(
            "wrong-accept", f"fit exit {code} after load_models accepted | {err.getvalue()[:80]!r}"
        )
    json.loads(out.getvalue())
    return gen.OK
