"""A transformer ready to estimate: its config, parameter layout and what its files said exactly."""

from __future__ import annotations

from dataclasses import dataclass, field

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit.transformer.bounds import check_counts
from gputui.fit.transformer.config import ConfigError, TransformerConfig
from gputui.fit.transformer.layout import Layout, layout


@dataclass(frozen=True, slots=True)
class TransformerModel:
    name: str
    config: TransformerConfig
    layout: Layout
    source: str  # the file or folder it came from (for messages)
    kind: str = "hf-config"  # hf-config, hf-folder, gguf, toml
    # from the checkpoint itself: safetensors headers or GGUF tensor infos
    exact_params: int | None = None
    stored_bytes: int | None = None  # bytes of the weights as stored
    stored_format: str | None = (
        None  # the weight format those bytes are in ("bf16", "gguf-q4_k", ...)
    )
    stored_dtypes: dict[str, int] = field(default_factory=dict)  # dtype -> parameter count
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """The counts the sizes describe and the checkpoint's own, bounded (fit.transformer.bounds):
        every importer builds one of these, so none can hand on a runaway product."""
        try:
            check_counts(self.exact_params, self.stored_bytes, self.layout.params)
        except ConfigError as exc:
            raise UserError(f"{visible(self.source)}: {visible(str(exc))}") from None

    @property
    def params(self) -> int:
        return self.exact_params if self.exact_params is not None else self.layout.params

    @property
    def default_weights(self) -> str:
        """The weight format the model is loaded in unless told otherwise."""
        if self.stored_format:
            return self.stored_format
        q = self.config.quantization
        if q is not None:
            return q.weights
        dtype = (self.config.torch_dtype or "bfloat16").lower()
        return {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(dtype, "bf16")


def from_config(
    cfg: TransformerConfig, name: str, source: str, kind: str = "hf-config"
) -> TransformerModel:
    return TransformerModel(name, cfg, layout(cfg), source, kind, warnings=cfg.warnings)
