"""Validated shapes of the catalog's TOML data.

These models are the contract between the catalog and the fit checker: the fit
checker reads `Card.memory_gib`, the throughput per precision and the card's
`Architecture.tensor_precisions`. Units live in field names.

Every number is range-checked here (and NaN/infinity refused): a mutated or mistyped
catalog must fail at load time with the field named, not print invalid JSON or rank a
card by a negative memory size later.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Segment = Literal["consumer", "workstation", "datacenter"]

# Precision names used across the catalog and the fit checker.
TensorPrecision = Literal["fp16", "bf16", "tf32", "int8", "int4", "fp8", "fp6", "fp4"]

# Bounds generous enough for any GPU NVIDIA could ship this decade, tight enough to
# catch a unit mistake (MiB for GiB, GFLOPS for TFLOPS) or a mutated file.
Count = Annotated[int, Field(ge=1, le=1_000_000)]
ClockMHz = Annotated[int, Field(ge=100, le=10_000)]
MemoryGiB = Annotated[float, Field(gt=0, le=4096)]
BusBits = Annotated[int, Field(ge=32, le=16_384)]
DataRateGbps = Annotated[float, Field(gt=0, le=100)]
BandwidthGBs = Annotated[float, Field(gt=0, le=100_000)]
Throughput = Annotated[float, Field(gt=0, le=1_000_000)]  # TFLOPS / TOPS
Watts = Annotated[float, Field(gt=0, le=10_000)]
Year = Annotated[int, Field(ge=2000, le=2100)]
PriceUSD = Annotated[float, Field(gt=0, le=10_000_000)]
Generation = Annotated[int, Field(ge=1, le=100)]

# Fields a card may mark as derived (computed by an architecture rule, not printed by
# the vendor for this card). Kept to figures: names, sources and flags are never derived.
DerivableField = Literal[
    "sm_count",
    "cuda_cores",
    "tensor_cores",
    "boost_clock_mhz",
    "memory_bus_width_bits",
    "memory_data_rate_gbps",
    "memory_bandwidth_gbs",
    "fp32_tflops",
    "fp16_tflops",
    "fp16_tensor_tflops",
    "fp16_acc16_tensor_tflops",
    "bf16_tensor_tflops",
    "tf32_tensor_tflops",
    "int8_tensor_tops",
    "fp8_tensor_tflops",
]


class Architecture(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str  # "Ampere"
    key: str  # "ampere": the TOML table name, also NVML's architecture word
    compute_capabilities: list[str]  # ["8.0", "8.6", "8.7"]
    year: Year
    tensor_core_generation: Generation | None = None  # None: no tensor cores (Pascal)
    tensor_precisions: list[TensorPrecision] = Field(default_factory=list)
    features: list[str] = Field(default_factory=list)  # "structured sparsity", "MIG", ...
    nvlink_generation: Generation | None = None
    notes: str


class Card(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str  # "GeForce RTX 3090"
    nvml_names: list[str]  # exact strings NVML reports for this card
    architecture: str  # Architecture.key
    compute_capability: str  # "8.6"
    segment: Segment
    chip: str | None = None  # "GA102", "TU116": precision rules differ within one architecture
    sm_count: Count | None = None
    cuda_cores: Count | None = None
    tensor_cores: Count | None = None
    boost_clock_mhz: ClockMHz | None = None
    memory_gib: MemoryGiB
    memory_type: str | None = None  # "GDDR6X", "HBM2e"
    memory_bus_width_bits: BusBits | None = None
    memory_data_rate_gbps: DataRateGbps | None = None  # per pin
    memory_bandwidth_gbs: BandwidthGBs | None = None
    fp32_tflops: Throughput | None = None
    fp16_tflops: Throughput | None = None  # FP16 on the CUDA cores (no tensor cores)
    fp16_tensor_tflops: Throughput | None = None  # dense, FP32 accumulate
    fp16_acc16_tensor_tflops: Throughput | None = None  # dense, FP16 accumulate where it differs
    bf16_tensor_tflops: Throughput | None = None
    tf32_tensor_tflops: Throughput | None = None
    int8_tensor_tops: Throughput | None = None
    fp8_tensor_tflops: Throughput | None = None
    tdp_w: Watts | None = None
    nvlink: str | None = None  # e.g. "NVLink 3, 600 GB/s" or None
    mig: bool = False
    launch_year: Year | None = None
    launch_price_usd: PriceUSD | None = None
    source: str  # vendor whitepaper / datasheet title(s)
    consistency_notes: str | None = None  # why a figure legitimately disagrees with the checks
    derived: list[DerivableField] = Field(default_factory=list)  # figures computed by a rule
    derived_rule: str | None = None  # the rule(s), in one line

    @model_validator(mode="after")
    def _derived_is_explained(self) -> Card:
        if self.derived and not (self.derived_rule and self.derived_rule.strip()):
            raise ValueError("derived_rule: say in one line how the derived figures follow")
        if self.derived_rule and not self.derived:
            raise ValueError("derived: list the fields derived_rule derives")
        if self.derived_rule and "\n" in self.derived_rule.strip():
            raise ValueError("derived_rule: keep the rule to one line")
        for field in self.derived:
            if getattr(self, field) is None:
                raise ValueError(f"derived: {field} is listed as derived but has no value")
        if len(set(self.derived)) != len(self.derived):
            raise ValueError("derived: a field is listed twice")
        return self

    def tensor_tflops(self, precision: str) -> float | None:
        """Dense tensor throughput for a precision name ("fp16", "bf16", "tf32", "int8", "fp8")."""
        return {
            "fp16": self.fp16_tensor_tflops,
            "bf16": self.bf16_tensor_tflops,
            "tf32": self.tf32_tensor_tflops,
            "int8": self.int8_tensor_tops,
            "fp8": self.fp8_tensor_tflops,
        }.get(precision)

    def is_derived(self, field: str) -> bool:
        return field in self.derived

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
