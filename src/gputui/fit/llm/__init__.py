"""Transformers and LLMs from their own config files: parameters, KV cache, memory per workload."""
