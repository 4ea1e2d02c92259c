"""A config.json's `quantization_config`: how a GPTQ/AWQ/bitsandbytes/fp8 checkpoint stores
its linears, as the weight-format name fit.transformer.formats knows."""

from __future__ import annotations

from collections.abc import Mapping

from gputui.fit.transformer.config import ConfigError, Quantization
from gputui.fit.transformer.hfread import Keys, show


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
    if method in ("fp8", "fbgemm_fp8", "compressed-tensors"):
        return Quantization(method, "fp8")
    if method == "mxfp4":
        return Quantization(method, "mxfp4")
    raise ConfigError(qk._field("quant_method"), f"unsupported quantization method {show(method)}")
