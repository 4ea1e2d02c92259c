"""A models-TOML table of `kind = "transformer"` (an importer: the table into a TransformerSpec): the model from `hf_config = "path"` or an
inline `config = { model_type = "llama", ... }` (HF's own key names), plus its workload keys.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit.core.software import OPTIMIZER_IMPLS
from gputui.fit.transformer.bounds import bound_of, show
from gputui.fit.transformer.config import ConfigError
from gputui.fit.transformer.context import check_context, default_seq
from gputui.fit.transformer.formats import kv_bits, weight_format
from gputui.fit.transformer.kv_moments import default_kv_dtype
from gputui.fit.transformer.model import TransformerModel, from_config
from gputui.fit.transformer.spec import TransformerSpec
from gputui.fit.transformer.weights import normalize_targets
from gputui.fit.transformer.workload import (
    ATTENTIONS,
    ENGINES,
    LOOPS,
    MODES,
    OPTIMIZERS,
    TRAIN_PRECISIONS,
    Workload,
)

KEYS = {
    "name", "kind", "hf_config", "config", "mode", "batch_size", "seq_len", "new_tokens",
    "method", "precision", "weights", "optimizer", "lora_rank", "lora_alpha", "lora_targets",
    "grad_checkpointing", "grad_accum", "attention", "kv_dtype", "paged_block", "optimizer_impl",
    "allow_longer_context", "loop", "engine",
}  # fmt: skip


# the keys that set the workload (the CLI's flags of the same names override them)
WORKLOAD_KEYS = KEYS - {"name", "kind", "hf_config", "config", "allow_longer_context"}
# bounds of the table's other values: longer names and lists than any real one
MAX_NAME = 64
MAX_TARGETS = 64
ALPHA_TOP = 1e9
# the quantity (fit.transformer.bounds) each integer key is bounded as
INT_QUANTITY = {"batch_size": "batch", "seq_len": "seq_len", "new_tokens": "new_tokens",
                "lora_rank": "lora_rank", "grad_accum": "grad_accum", "paged_block": "block"}  # fmt: skip


def _int(raw: Mapping[str, Any], key: str, default: int, where: str) -> int:
    v = raw.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise UserError(f"{where}: {key}: must be a positive integer, got {show(v)}")
    top = bound_of(INT_QUANTITY[key])
    if v > top:
        raise UserError(f"{where}: {key}: {show(v)} is over the bound {top}")
    return v


def _choice(
    raw: Mapping[str, Any], key: str, default: str, choices: tuple[str, ...], where: str
) -> str:
    v = raw.get(key, default)
    if not isinstance(v, str) or v not in choices:
        raise UserError(f"{where}: {key}: must be one of {', '.join(choices)}, got {show(v)}")
    return v


def _text(raw: Mapping[str, Any], key: str, default: str, where: str) -> str:
    """A name-like string value (a format, a dtype), refused unless a short string."""
    v = raw.get(key, default)
    if not isinstance(v, str) or not 0 < len(v) <= MAX_NAME:
        raise UserError(
            f"{where}: {key}: must be a string of 1 to {MAX_NAME} characters, got {show(v)}"
        )
    return v


def _alpha(raw: Mapping[str, Any], default: int, where: str) -> float:
    """`lora_alpha`: a positive int or float under ALPHA_TOP, compared before any float
    conversion (a 400-digit integer overflows one)."""
    v = raw.get("lora_alpha", default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise UserError(f"{where}: lora_alpha: must be a positive number, got {show(v)}")
    if isinstance(v, float) and not math.isfinite(v) or not 0 < v < ALPHA_TOP:
        raise UserError(
            f"{where}: lora_alpha: must be a positive number under {ALPHA_TOP:.0e}, got {show(v)}"
        )
    return float(v)


def _targets(raw: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """`lora_targets`: a short list of short module names (PEFT's or the roles)."""
    v = raw.get("lora_targets", ["q", "k", "v", "o"])
    if (
        not isinstance(v, list)
        or not 0 < len(v) <= MAX_TARGETS
        or not all(isinstance(t, str) and len(t) <= MAX_NAME for t in v)
    ):
        raise UserError(
            f"{where}: lora_targets: must be a list of 1 to {MAX_TARGETS} module names "
            f'such as ["q_proj", "v_proj"], got {show(v)}'
        )
    try:
        return normalize_targets(v)
    except ValueError as exc:
        raise UserError(f"{where}: lora_targets: {visible(str(exc))}") from None


def from_model_table(
    raw: Mapping[str, Any],
    where: str,
    base_dir: Path | None = None,
    load_config: Callable[[Path], TransformerModel] | None = None,
) -> TransformerSpec:
    """The transformer and workload a TOML table describes; UserError names `where` and the key.

    `where` is how messages point at the table (e.g. "models.toml, model 'llama'");
    a relative `hf_config` is resolved against `base_dir` (default: the current directory)
    and read by `load_config` (the models file passes fit/importers/hf.py's load_path:
    the engine does not import the importers, which import it).
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
        if load_config is None:
            raise ValueError("from_model_table: an hf_config table needs load_config")
        try:
            model = load_config(p)
        except UserError as exc:  # the file's own problem, pointed at from the table
            raise UserError(f"{where}: hf_config: {exc}", exc.exit_code) from None
        model = TransformerModel(
            visible(name), model.config, model.layout, model.source, "toml",
            model.exact_params, model.stored_bytes, model.stored_format, model.stored_dtypes, model.warnings,
        )  # fmt: skip
    else:
        # the HF importer's key rules, imported here: the importers import this module
        from gputui.fit.importers.hfkeys import from_hf_dict

        cfg_raw = raw["config"]
        if not isinstance(cfg_raw, Mapping):
            raise UserError(f"{where}: config: must be a table of Hugging Face config keys")
        try:
            cfg = from_hf_dict(cfg_raw, "config.")
        except ConfigError as exc:
            raise UserError(f"{where}: {visible(str(exc))}") from None
        model = from_config(cfg, visible(name), where, "toml")
    mode = _choice(raw, "mode", "inference" if model.config.encoder else "generate", MODES, where)
    if model.config.encoder and mode == "generate":
        raise UserError(
            f"{where}: mode: {model.config.model_type} is an encoder; it does not generate"
        )
    lora_keys = [k for k in ("lora_rank", "lora_alpha", "lora_targets") if k in raw]
    method = _choice(
        raw, "method", "lora" if lora_keys else "full", ("full", "lora", "qlora"), where
    )
    _only(raw, where, mode, "train", ("method", "optimizer", "lora_rank", "lora_alpha",
          "lora_targets", "grad_checkpointing", "grad_accum", "precision",
          "optimizer_impl", "loop"))  # fmt: skip
    _only(raw, where, mode, "generate", ("new_tokens", "kv_dtype", "paged_block", "engine"))
    if method == "full" and lora_keys:
        raise UserError(f'{where}: {lora_keys[0]}: only with method = "lora" or "qlora"')
    default_weights = model.default_weights
    if method == "qlora":
        default_weights = "nf4-dq"
    elif mode == "train" and default_weights not in ("bf16", "fp16", "fp32"):
        default_weights = "bf16"  # LoRA and full fine-tunes train on an unquantized base
    weights = _text(raw, "weights", default_weights, where)
    if mode == "train" and method == "full" and "weights" in raw:
        raise UserError(
            f"{where}: weights: a full fine-tune keeps its weights in precision "
            "(fp32, amp_bf16, bf16, ...); leave weights out"
        )
    kv_dtype = _text(raw, "kv_dtype", "fp16", where)
    try:
        fmt = weight_format(weights)
    except ValueError as exc:
        raise UserError(f"{where}: weights: {visible(str(exc))}") from None
    try:
        kv_bits(kv_dtype)
    except ValueError as exc:
        raise UserError(f"{where}: kv_dtype: {visible(str(exc))}") from None
    targets = _targets(raw, where)
    four_bit = ("nf4", "nf4-dq", "fp4", "fp4-dq")
    if method == "lora" and fmt.name in four_bit:
        method = "qlora"
    if method == "qlora" and fmt.name not in four_bit:
        raise UserError(
            f"{where}: weights: QLoRA trains on a 4-bit bitsandbytes base (nf4, nf4-dq, fp4), "
            f"got {weights!r}"
        )
    cfg = model.config
    new_tokens = _int(raw, "new_tokens", 256, where)
    seq = _int(raw, "seq_len", default_seq(cfg, mode, new_tokens), where)
    for key in ("grad_checkpointing", "allow_longer_context"):
        if key in raw and not isinstance(raw[key], bool):
            raise UserError(f"{where}: {key}: must be true or false, got {show(raw[key])}")
    allow = bool(raw.get("allow_longer_context", False))
    keys = (f"{where}: seq_len", f"{where}: new_tokens", "allow_longer_context = true")
    check_context(cfg, seq, new_tokens, mode, allow, keys, "new_tokens" in raw)
    alpha = _alpha(raw, 2 * _int(raw, "lora_rank", 16, where), where)
    wl = Workload(
        mode=mode,  # type: ignore[arg-type]
        batch_size=_int(raw, "batch_size", 1, where),
        seq_len=seq,
        new_tokens=new_tokens,
        method=method,  # type: ignore[arg-type]
        precision=_choice(raw, "precision", "amp_bf16", TRAIN_PRECISIONS, where),  # type: ignore[arg-type]
        weights=fmt.name if not (mode == "train" and method == "full") else "bf16",
        optimizer=_choice(
            raw, "optimizer", "adamw_8bit" if method == "qlora" else "adamw", OPTIMIZERS, where
        ),  # type: ignore[arg-type]
        optimizer_impl=_choice(raw, "optimizer_impl", "foreach", OPTIMIZER_IMPLS, where),  # type: ignore[arg-type]
        loop=_choice(raw, "loop", "plain", LOOPS, where),  # type: ignore[arg-type]
        engine=_choice(raw, "engine", "hf", ENGINES, where),  # type: ignore[arg-type]
        lora_rank=_int(raw, "lora_rank", 16, where),
        lora_alpha=alpha,
        lora_targets=targets,
        grad_checkpointing=bool(raw.get("grad_checkpointing", False)),
        grad_accum=_int(raw, "grad_accum", 1, where),
        attention=_choice(raw, "attention", "sdpa", ATTENTIONS, where),  # type: ignore[arg-type]
        kv_dtype=kv_dtype if "kv_dtype" in raw else default_kv_dtype(model, fmt.name),
        paged_block=_int(raw, "paged_block", 16, where) if "paged_block" in raw else None,
    )
    given = frozenset(k for k in raw if k in WORKLOAD_KEYS)
    return TransformerSpec(visible(name), model, wl, given, allow)


def _only(
    raw: Mapping[str, Any], where: str, mode: str, wanted: str, keys: tuple[str, ...]
) -> None:
    """A key that means nothing in this mode is refused, not silently ignored."""
    for key in keys:
        if key in raw and mode != wanted:
            raise UserError(f'{where}: {key}: only with mode = "{wanted}" (mode is "{mode}")')
