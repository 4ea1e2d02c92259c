"""The shapes of the catalog's TOML data: plain frozen classes, and the bounds that validate them.

These classes are the contract between the catalog and the fit checker: the fit
checker reads `Card.memory_gib`, the throughput per precision and the card's
`Architecture.tensor_precisions`. Units live in field names.

Every number is range-checked (and NaN/infinity refused) when a catalog file is
loaded: a mutated or mistyped catalog must fail at load time with the field named,
not print invalid JSON or rank a card by a negative memory size later. The checks are
written here, next to the fields, as `Bounds` in the annotations; the loader builds
pydantic models from these classes (`gputui.catalog.validate`, which turns each
`Bounds` into pydantic's own constraint) and validates with them. The classes themselves are plain frozen slotted dataclasses, so
the dashboard, which reads a catalog it validated before from the cache
(`gputui.catalog.cache`), never imports pydantic: ~11 MiB of resident memory (its
modules, its compiled core and the per-class validators) for 130 read-only records.

They keep the few pydantic methods their callers use (`model_validate`, `model_dump`,
`model_copy`, `model_fields`), with the same meaning, so no caller changed with them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar

from gputui.catalog.bounds import Bounds

Segment = Literal["consumer", "workstation", "datacenter"]

# Precision names used across the catalog and the fit checker.
TensorPrecision = Literal["fp16", "bf16", "tf32", "int8", "int4", "fp8", "fp6", "fp4"]

# Bounds generous enough for any GPU NVIDIA could ship this decade, tight enough to
# catch a unit mistake (MiB for GiB, GFLOPS for TFLOPS) or a mutated file.
Count = Annotated[int, Bounds(ge=1, le=1_000_000)]
ClockMHz = Annotated[int, Bounds(ge=100, le=10_000)]
MemoryGiB = Annotated[float, Bounds(gt=0, le=4096)]
BusBits = Annotated[int, Bounds(ge=32, le=16_384)]
DataRateGbps = Annotated[float, Bounds(gt=0, le=100)]
BandwidthGBs = Annotated[float, Bounds(gt=0, le=100_000)]
Throughput = Annotated[float, Bounds(gt=0, le=1_000_000)]  # TFLOPS / TOPS
Watts = Annotated[float, Bounds(gt=0, le=10_000)]
Year = Annotated[int, Bounds(ge=2000, le=2100)]
PriceUSD = Annotated[float, Bounds(gt=0, le=10_000_000)]
Generation = Annotated[int, Bounds(ge=1, le=100)]

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

# Fields a card may take from a named third party: the figures, and the power limit.
ThirdPartyField = Literal[DerivableField, "tdp_w"]

_Record = TypeVar("_Record", bound="_Fields")


class _Fields:
    """The pydantic-style methods the catalog's callers use, on a plain dataclass."""

    __slots__ = ()
    model_fields: ClassVar[tuple[str, ...]] = ()  # field names in declaration order

    if TYPE_CHECKING:  # the dataclass writes the real one

        def __init__(self, **fields: Any) -> None: ...

    @classmethod
    def model_validate(cls: type[_Record], data: Mapping[str, Any]) -> _Record:
        """Validated as a catalog file's entry is (pydantic.ValidationError when it is not)."""
        from gputui.catalog.validate import validate

        return validate(cls, data)

    def model_dump(self, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """Field name -> value in declaration order, lists copied; JSON's types either mode."""
        out: dict[str, Any] = {}
        for name in self.model_fields:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, list) else value
        return out

    def model_copy(self: _Record, *, update: Mapping[str, Any] | None = None) -> _Record:
        """A copy with some fields replaced, unvalidated (as pydantic's model_copy)."""
        return type(self)(**{**self.model_dump(), **(update or {})})


# kw_only: the fields keep the order of the catalog's documentation (and of
# `gputui catalog --json`), required ones among the optional.
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Architecture(_Fields):
    name: str  # "Ampere"
    key: str  # "ampere": the TOML table name, also NVML's architecture word
    compute_capabilities: list[str]  # ["8.0", "8.6", "8.7"]
    year: Year
    tensor_core_generation: Generation | None = None  # None: no tensor cores (Pascal)
    tensor_precisions: list[TensorPrecision] = dataclasses.field(default_factory=list)
    features: list[str] = dataclasses.field(default_factory=list)  # "structured sparsity", "MIG"
    nvlink_generation: Generation | None = None
    notes: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Card(_Fields):
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
    derived: list[DerivableField] = dataclasses.field(default_factory=list)  # computed by a rule
    derived_rule: str | None = None  # the rule(s), in one line
    # figures no vendor document gives, taken from a named third party (a review, a
    # reference site), and who published them, in one line
    third_party: list[ThirdPartyField] = dataclasses.field(default_factory=list)
    third_party_source: str | None = None

    def derived_problem(self) -> str | None:
        """What is wrong with `derived`/`derived_rule` together ("field: why"), or None.

        A whole-card check: the validator reports it as the card's error, naming the field.
        """
        if self.derived and not (self.derived_rule and self.derived_rule.strip()):
            return "derived_rule: say in one line how the derived figures follow"
        if self.derived_rule and not self.derived:
            return "derived: list the fields derived_rule derives"
        if self.derived_rule and "\n" in self.derived_rule.strip():
            return "derived_rule: keep the rule to one line"
        for field in self.derived:
            if getattr(self, field) is None:
                return f"derived: {field} is listed as derived but has no value"
        if len(set(self.derived)) != len(self.derived):
            return "derived: a field is listed twice"
        # `third_party` figures need their source named, a value, and no derivation
        source = (self.third_party_source or "").strip()
        if self.third_party and not source:
            return "third_party_source: name who published the third-party figures"
        if source and not self.third_party:
            return "third_party: list the fields third_party_source gives"
        if "\n" in source:
            return "third_party_source: keep the source to one line"
        for name in self.third_party:
            if getattr(self, name) is None:
                return f"third_party: {name} is listed as third-party but has no value"
            if name in self.derived:
                return f"third_party: {name} is also listed as derived"
        if len(set(self.third_party)) != len(self.third_party):
            return "third_party: a field is listed twice"
        return None

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

    def is_third_party(self, field: str) -> bool:
        return field in self.third_party

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * 1024**3)


for _record in (Architecture, Card):
    _record.model_fields = tuple(f.name for f in dataclasses.fields(_record))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MatchResult:
    """What the matcher decided for one installed GPU."""

    status: Literal["card", "architecture", "ambiguous", "unknown"]
    card: Card | None = None
    architecture: Architecture | None = None
    candidates: list[str] = dataclasses.field(default_factory=list)
