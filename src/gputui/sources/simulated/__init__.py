"""Simulated GPUs driven by a scenario file, for demos, tests and screenshots."""
