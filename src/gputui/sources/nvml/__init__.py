"""The real source: NVIDIA GPUs through NVML (`pynvml` from nvidia-ml-py)."""
