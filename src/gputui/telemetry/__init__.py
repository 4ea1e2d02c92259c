"""Telemetry: sources (NVML, simulated) produce Snapshots; history and JSON output consume them.

Deliberately empty of imports: `gputui snapshot` imports only the submodules it
needs, and the NVML path must not load the simulator (or the reverse).
"""
