"""Transformers and LLMs from their own config files: parameters, KV cache, memory per workload."""

from gputui.fit.transformer.table import TransformerSpec, from_model_table

__all__ = ["TransformerSpec", "from_model_table"]
