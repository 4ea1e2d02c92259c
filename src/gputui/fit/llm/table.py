"""A models-TOML table of `kind = "transformer"`: the model from `hf_config = "path"` or an
inline `config = { model_type = "llama", ... }` (HF's own key names), plus its workload keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputui.errors import UserError
from gputui.fit.llm.config import ConfigError
from gputui.fit.llm.formats import kv_bits, weight_format
from gputui.fit.llm.hfkeys import from_hf_dict
from gputui.fit.llm.model import TransformerModel, from_config
from gputui.fit.llm.weights import normalize_targets
from gputui.fit.llm.workload import ATTENTIONS, MODES, OPTIMIZERS, TRAIN_PRECISIONS, Workload
from gputui.textsafe import visible

KEYS = {
    "name", "kind", "hf_config", "config", "mode", "batch_size", "seq_len", "new_tokens",
    "method", "precision", "weights", "optimizer", "lora_rank", "lora_alpha", "lora_targets",
    "grad_checkpointing", "grad_accum", "attention", "kv_dtype", "paged_block",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class TransformerSpec:
    name: str
    model: TransformerModel
    workload: Workload


def _int(raw: Mapping[str, Any], key: str, default: int, where: str) -> int:
    v = raw.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise UserError(f"{where}: {key}: must be a positive integer, got {v!r}")
    return v


def _choice(
    raw: Mapping[str, Any], key: str, default: str, choices: tuple[str, ...], where: str
) -> str:
    v = raw.get(key, default)
    if v not in choices:
        raise UserError(f"{where}: {key}: must be one of {', '.join(choices)}, got {v!r}")
    return str(v)


def from_model_table(
    raw: Mapping[str, Any], where: str, base_dir: Path | None = None
) -> TransformerSpec:
    """The transformer and workload a TOML table describes; UserError names `where` and the key.

    `where` is how messages point at the table (e.g. "models.toml, model 'llama'");
    a relative `hf_config` is resolved against `base_dir` (default: the current directory).
    """
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise UserError(
            f"{where}: {unknown[0]}: unknown key (transformer tables take: {', '.join(sorted(KEYS))})"
        )
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise UserError(f"{where}: name: required string")
    if ("hf_config" in raw) == ("config" in raw):
        raise UserError(f'{where}: give exactly one of hf_config = "path" or config = {{...}}')
    if "hf_config" in raw:
        path = raw["hf_config"]
        if not isinstance(path, str):
            raise UserError(f"{where}: hf_config: must be a path string")
        p = Path(path)
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        from gputui.fit.importers.hf import load_path

        model = load_path(p)
        model = TransformerModel(
            visible(name), model.config, model.layout, model.source, "toml",
            model.exact_params, model.stored_bytes, model.stored_format, model.stored_dtypes, model.warnings,
        )  # fmt: skip
    else:
        cfg_raw = raw["config"]
        if not isinstance(cfg_raw, Mapping):
            raise UserError(f"{where}: config: must be a table of Hugging Face config keys")
        try:
            cfg = from_hf_dict(cfg_raw, "config.")
        except ConfigError as exc:
            raise UserError(f"{where}: {visible(str(exc))}") from None
        model = from_config(cfg, visible(name), where, "toml")
    mode = _choice(raw, "mode", "inference" if model.config.encoder else "generate", MODES, where)
    weights = raw.get("weights", model.default_weights)
    try:
        weight_format(str(weights))
        kv_bits(str(raw.get("kv_dtype", "fp16")))
        targets = normalize_targets(raw.get("lora_targets", ["q", "k", "v", "o"]))
    except (ValueError, TypeError) as exc:
        raise UserError(f"{where}: {exc}") from None
    method = _choice(raw, "method", "full", ("full", "lora", "qlora"), where)
    wl = Workload(
        mode=mode,  # type: ignore[arg-type]
        batch_size=_int(raw, "batch_size", 1, where),
        seq_len=_int(
            raw, "seq_len", min(2048, model.config.max_position_embeddings or 2048), where
        ),
        new_tokens=_int(raw, "new_tokens", 256, where),
        method=method,  # type: ignore[arg-type]
        precision=_choice(raw, "precision", "amp_bf16", TRAIN_PRECISIONS, where),  # type: ignore[arg-type]
        weights=weight_format(
            str(weights if method != "qlora" else raw.get("weights", "nf4-dq"))
        ).name,
        optimizer=_choice(raw, "optimizer", "adamw", OPTIMIZERS, where),  # type: ignore[arg-type]
        lora_rank=_int(raw, "lora_rank", 16, where),
        lora_alpha=float(raw.get("lora_alpha", 32)),
        lora_targets=targets,
        grad_checkpointing=bool(raw.get("grad_checkpointing", False)),
        grad_accum=_int(raw, "grad_accum", 1, where),
        attention=_choice(raw, "attention", "sdpa", ATTENTIONS, where),  # type: ignore[arg-type]
        kv_dtype=str(raw.get("kv_dtype", "fp16")),
        paged_block=_int(raw, "paged_block", 16, where) if "paged_block" in raw else None,
    )
    return TransformerSpec(visible(name), model, wl)
