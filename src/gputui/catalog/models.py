"""Validated shapes of the catalog's TOML data.

These models are the contract between the catalog and the fit checker: the fit
checker reads `Card.memory_gib`, the tensor throughput per precision and the
card's `Architecture.tensor_precisions`. Units live in field names.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Segment = Literal["consumer", "workstation", "datacenter"]

# Precision names used across the catalog and the fit checker.
TensorPrecision = Literal["fp16", "bf16", "tf32", "int8", "int4", "fp8", "fp6", "fp4"]


class Architecture(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str  # "Ampere"
    key: str  # "ampere": the TOML table name, also NVML's architecture word
    compute_capabilities: list[str]  # ["8.0", "8.6", "8.7"]
    year: int
    tensor_core_generation: int | None = None  # None: no tensor cores (Pascal)
    tensor_precisions: list[TensorPrecision] = Field(default_factory=list)
    features: list[str] = Field(default_factory=list)  # "structured sparsity", "MIG", ...
    nvlink_generation: int | None = None
    notes: str


class Card(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str  # "GeForce RTX 3090"
    nvml_names: list[str]  # exact strings NVML reports for this card
    architecture: str  # Architecture.key
    compute_capability: str  # "8.6"
    segment: Segment
    sm_count: int | None = None
    cuda_cores: int | None = None
    tensor_cores: int | None = None
    boost_clock_mhz: int | None = None
    memory_gib: float
    memory_type: str | None = None  # "GDDR6X", "HBM2e"
    memory_bus_width_bits: int | None = None
    memory_data_rate_gbps: float | None = None  # per pin
    memory_bandwidth_gbs: float | None = None
    fp32_tflops: float | None = None
    fp16_tensor_tflops: float | None = None  # dense, FP32 accumulate
    fp16_acc16_tensor_tflops: float | None = None  # dense, FP16 accumulate where it differs
    bf16_tensor_tflops: float | None = None
    tf32_tensor_tflops: float | None = None
    int8_tensor_tops: float | None = None
    fp8_tensor_tflops: float | None = None
    tdp_w: float | None = None
    nvlink: str | None = None  # e.g. "NVLink 3, 600 GB/s" or None
    mig: bool = False
    launch_year: int | None = None
    launch_price_usd: float | None = None
    source: str  # vendor whitepaper / datasheet title(s)
    consistency_notes: str | None = None  # why a figure legitimately disagrees with the checks

    def tensor_tflops(self, precision: str) -> float | None:
        """Dense tensor throughput for a precision name ("fp16", "bf16", "tf32", "int8", "fp8")."""
        return {
            "fp16": self.fp16_tensor_tflops,
            "bf16": self.bf16_tensor_tflops,
            "tf32": self.tf32_tensor_tflops,
            "int8": self.int8_tensor_tops,
            "fp8": self.fp8_tensor_tflops,
        }.get(precision)

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * 1024**3)


class MatchResult(BaseModel):
    """What the matcher decided for one installed GPU."""

    model_config = ConfigDict(frozen=True)

    status: Literal["card", "architecture", "ambiguous", "unknown"]
    card: Card | None = None
    architecture: Architecture | None = None
    candidates: list[str] = Field(default_factory=list)
