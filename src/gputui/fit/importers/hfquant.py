"""A config.json's `quantization_config`: how a GPTQ/AWQ/bitsandbytes/fp8/compressed-tensors
checkpoint stores its linears, as the weight-format name fit.transformer.formats knows. A scheme
not known here is refused: a guess would be a confident wrong number."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gputui.fit.importers.hfread import Keys, show
from gputui.fit.transformer.config import ConfigError, Quantization


def quantization(k: Keys) -> Quantization | None:
    q = k.raw.get("quantization_config")
    if q is None:
        return None
    if not isinstance(q, Mapping):
        raise ConfigError(k._field("quantization_config"), "must be a table")
    qk = Keys(q, k._field("quantization_config."))
    method = (qk.text("quant_method") or "").lower()
    if method in ("gptq", "awq"):
        bits = (
            qk.integer("bits", 4)
            if method == "gptq"
            else qk.integer("w_bit", qk.integer("bits", 4))
        )
        group = (
            qk.integer("group_size", 128, minimum=-1)
            if method == "gptq"
            else qk.integer("q_group_size", qk.integer("group_size", 128))
        )
        if bits not in (2, 3, 4, 8):
            raise ConfigError(qk._field("bits"), f"unsupported bit width {bits}")
        return Quantization(method, f"{method}-int{bits}", group if group > 0 else None)
    if method == "bitsandbytes":
        if qk.flag("load_in_4bit", False):
            qtype = (qk.text("bnb_4bit_quant_type") or "fp4").lower()
            if qtype not in ("nf4", "fp4"):
                raise ConfigError(
                    qk._field("bnb_4bit_quant_type"), f"must be nf4 or fp4, got {show(qtype)}"
                )
            double = qk.flag("bnb_4bit_use_double_quant", False)
            return Quantization(method, f"{qtype}{'-dq' if double else ''}")
        if qk.flag("load_in_8bit", False):
            return Quantization(method, "int8")
        raise ConfigError(
            qk._field("load_in_4bit"), "bitsandbytes config loads neither 4 nor 8 bit"
        )
    if method == "compressed-tensors":
        return _compressed_tensors(qk)
    if method in ("fp8", "fbgemm_fp8"):
        return Quantization(method, "fp8")
    if method == "mxfp4":
        return Quantization(method, "mxfp4")
    raise ConfigError(qk._field("quant_method"), f"unsupported quantization method {show(method)}")


# compressed-tensors `format` -> how a weight is stored: packed in num_bits, or one per byte
_CT_STORAGE = {
    "pack-quantized": "packed",
    "nvfp4-pack-quantized": "packed",
    "float-quantized": "byte",
    "int-quantized": "byte",
    "naive-quantized": "byte",
}
_CT_MAX_GROUPS = 64
# `ignore` entries that leave the estimate unchanged: the LM head (always 16-bit here),
# MoE routers (never quantized here) and towers outside the text model
_CT_OUTSIDE = re.compile(r".*(lm_head|vision|visual|multi_modal_projector|mm_projector|audio).*")
_CT_ROUTER = re.compile(r"(.*[.*])?(gate|router|shared_expert_gate)")


def _compressed_tensors(qk: Keys) -> Quantization:
    """One weight scheme for every linear, from `config_groups`; mixed or partial schemes,
    and `ignore` entries naming linears of the blocks, are refused."""
    storage = _CT_STORAGE.get((qk.text("format") or "pack-quantized").lower())
    if storage is None:
        raise ConfigError(
            qk._field("format"),
            f"unsupported compressed-tensors format {show(qk.raw.get('format'))} "
            f"(supported: {', '.join(_CT_STORAGE)})",
        )
    groups = qk.raw.get("config_groups")
    if not isinstance(groups, Mapping) or not 0 < len(groups) <= _CT_MAX_GROUPS:
        raise ConfigError(
            qk._field("config_groups"), f"must be a table of 1 to {_CT_MAX_GROUPS} schemes"
        )
    schemes: dict[str, str] = {}
    whole = False
    for key, group in groups.items():
        field = qk._field(f"config_groups.{show(key).strip(chr(39))}.")
        if not isinstance(group, Mapping):
            raise ConfigError(field.rstrip("."), "must be a table")
        schemes[_ct_weights(group.get("weights"), field + "weights", storage)] = field
        targets = group.get("targets", ["Linear"])
        whole = whole or isinstance(targets, list) and "Linear" in targets
    if len(schemes) > 1:
        raise ConfigError(
            qk._field("config_groups"),
            f"mixes {', '.join(sorted(schemes))}: gputui sizes one scheme for every linear",
        )
    if not whole:
        raise ConfigError(
            qk._field("config_groups"),
            'no scheme targets "Linear": gputui sizes only schemes that quantize every linear',
        )
    _ct_ignore(qk)
    return Quantization("compressed-tensors", next(iter(schemes)))


def _ct_weights(raw: Any, field: str, storage: str) -> str:
    """The weight-format name of one scheme's `weights` arguments."""
    if not isinstance(raw, Mapping):
        raise ConfigError(field, "must be a table (a scheme that leaves weights unquantized)")
    wk = Keys(raw, field + ".")
    bits = wk.integer("num_bits")
    kind = (wk.text("type") or "int").lower()
    strategy = (wk.text("strategy") or "tensor").lower()
    symmetric = wk.flag("symmetric", True)
    unknown = ConfigError(
        field,
        f"unsupported compressed-tensors scheme: {kind} {bits}-bit, strategy {show(strategy)}"
        f"{'' if symmetric else ', asymmetric'} (supported: int 2/3/4/8-bit by group, channel "
        "or tensor; float 8-bit; NVFP4)",
    )
    if kind == "float":
        if bits == 8 and strategy in ("tensor", "channel", "block", "token"):
            return "fp8"
        group = wk.integer("group_size", 16)
        if bits == 4 and strategy in ("group", "tensor_group") and group == 16 and symmetric:
            return "nvfp4"
        raise unknown
    if kind != "int" or bits not in (2, 3, 4, 8) or storage == "byte" and bits != 8:
        raise unknown
    if strategy == "group":
        scales = f"g{wk.integer('group_size')}"
    elif strategy in ("channel", "tensor"):
        scales = strategy
    else:
        raise unknown
    actorder = raw.get("actorder")
    g_idx = actorder == "group" or actorder is True
    return f"ct-int{bits}-{scales}{'' if symmetric else '-asym'}{'-gidx' if g_idx else ''}"


def _ct_kept(entry: str) -> bool:
    """Whether an `ignore` entry names only what stays unquantized here anyway. A "re:"
    entry is matched from the start of a module name (re.match), so a router pattern must
    end in `$` (".*mlp.gate" would also take gate_proj) and no alternation is trusted."""
    if entry.startswith("re:"):
        pattern = entry[3:]
        if "|" in pattern:
            return False
        if _CT_OUTSIDE.fullmatch(pattern):
            return True
        return pattern.endswith("$") and bool(_CT_ROUTER.fullmatch(pattern[:-1]))
    return bool(_CT_OUTSIDE.fullmatch(entry) or _CT_ROUTER.fullmatch(entry))


def _ct_ignore(qk: Keys) -> None:
    """`ignore` may name only what stays unquantized here anyway (see _ct_kept)."""
    ignore = qk.raw.get("ignore", [])
    if not isinstance(ignore, list) or len(ignore) > 100_000:
        raise ConfigError(qk._field("ignore"), "must be a list of module names")
    for entry in ignore:
        if not isinstance(entry, str):
            raise ConfigError(qk._field("ignore"), f"must hold module names, got {show(entry)}")
        if not _ct_kept(entry):
            raise ConfigError(
                qk._field("ignore"),
                f"{show(entry)} leaves a linear of the blocks unquantized: gputui sizes only "
                "schemes that quantize every linear of the blocks",
            )
