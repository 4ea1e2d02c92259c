"""Will this model fit on this GPU: a pure library (no UI, no NVML, no Textual)."""
