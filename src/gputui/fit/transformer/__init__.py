"""Transformers and LLMs from their own config files: parameters, KV cache, memory per workload."""

from gputui.fit.transformer.spec import TransformerSpec

__all__ = ["TransformerSpec"]
