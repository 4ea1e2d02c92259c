"""Where snapshots come from: NVML, the host, simulated GPUs, a Prometheus server."""
