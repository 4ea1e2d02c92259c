"""Generators of hostile input files and the checks that judge what gputui did with them.

Shared by the bounded property tests in this folder and the long campaign in
benchmarks/fuzz.py. Every generator is a function of a `random.Random`, so a
case is reproducible from (family, seed, index) and hypothesis can drive it
through `st.randoms()`.

A check returns an `Outcome`: "ok" (accepted and every invariant held),
"rejected" (a one-line UserError), or a wrong accept (accepted although the
input was invalid, or accepted with an answer that breaks an invariant). Any
other exception escapes: that is a crash, and the caller reports it.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Any

from gputui.core.errors import UserError

REPO = Path(__file__).resolve().parents[2]
CATALOG_DIR = REPO / "catalog"


@dataclass(frozen=True)
class Outcome:
    kind: str  # "ok", "rejected" or "wrong-accept"
    detail: str = ""


OK = Outcome("ok")


@contextlib.contextmanager
def no_hang(seconds: float = 30.0) -> Iterator[None]:
    """Turn a hang into a failure (SIGALRM; a guard, not a speed target)."""

    def expired(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"still running after {seconds:g} s: a hang")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- TOML writing (enough for generated data: no tomli_w dependency) --------------------


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _key(key: str) -> str:
    return (
        key
        if key and all(c.isalnum() or c in "_-" for c in key) and key.isascii()
        else _string(key)
    )


def _value(value: Any) -> str:
    if isinstance(value, RawToml):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def to_toml(data: dict[str, Any]) -> str:
    """TOML text for `data`: scalars first, then [tables] and [[arrays of tables]]."""
    lines: list[str] = []
    later: list[str] = []
    for key, value in data.items():
        if (
            isinstance(value, dict)
            and value
            and all(not isinstance(v, dict) for v in value.values())
        ):
            later.append(f"\n[{_key(key)}]")
            later.extend(f"{_key(k)} = {_value(v)}" for k, v in value.items())
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for table in value:
                later.append(f"\n[[{_key(key)}]]")
                later.extend(f"{_key(k)} = {_value(v)}" for k, v in table.items())
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    return "\n".join(lines + later) + "\n"


# --- values -----------------------------------------------------------------------------

HUGE_INTS = [2**31, 2**53 + 1, 2**62, 2**63, 2**64, 10**30, 10**400]
SPECIAL_FLOATS = [1e308, -1e308, math.inf, -math.inf, math.nan, 5e-324, -0.0, 1e-300]
NASTY_STRINGS = [
    "",
    " ",
    "abc",
    "\x1b]0;pwn\x07",
    "\x1b[2J",
    "[red]x",
    "x" * 5000,
    "8.6\n",
    "é\u202e",
]
NASTY = [0, -1, -5, 1, 0.5, 2.5, True, False, [], [1, 2], {}, {"x": 1}, "maybe"]


def extreme(rng: Random) -> Any:
    pool = rng.choice([HUGE_INTS, SPECIAL_FLOATS, NASTY_STRINGS, NASTY])
    value = rng.choice(pool)
    if isinstance(value, int) and not isinstance(value, bool) and rng.random() < 0.3:
        value = -value
    return value


class RawToml(str):
    """A value written into the TOML as is (deep nesting is built as text, not recursively)."""


def nested(rng: Random, depth: int | None = None) -> RawToml:
    depth = depth if depth is not None else rng.choice([2, 10, 70, 200])
    opens = [rng.random() < 0.5 for _ in range(depth)]
    head = "".join("[" if is_list else "{a = " for is_list in opens)
    tail = "".join("]" if is_list else "}" for is_list in reversed(opens))
    return RawToml(head + "1" + tail)


def size(rng: Random, lo: int = 1 << 20, hi: int = 96 << 30) -> Any:
    n = rng.randint(lo, hi)
    if rng.random() < 0.5:
        return n
    unit, scale = rng.choice([("GiB", 1 << 30), ("MiB", 1 << 20), ("GB", 10**9), ("B", 1)])
    return f"{max(1, n // scale)} {unit}"


# --- scenario files ---------------------------------------------------------------------

SCENARIO_FIELDS = {
    "": [
        "seed",
        "hostname",
        "driver_version",
        "cuda_driver_version",
        "nvml_version",
        "start_timestamp",
        "notices",
    ],
    "host": [
        "cpu_count",
        "memory_total",
        "swap_total",
        "swap_used",
        "base_memory_used",
        "base_cpu_percent",
    ],
    "gpu": [
        "name",
        "memory_total",
        "power_limit_w",
        "max_sm_clock_mhz",
        "max_mem_clock_mhz",
        "uuid",
        "pci_bus_id",
        "compute_capability",
        "architecture",
        "memory_reserved",
        "idle_power_w",
        "idle_sm_clock_mhz",
        "idle_mem_clock_mhz",
        "temp_idle_c",
        "temp_at_limit_c",
        "load_pstate",
        "mig_mode",
        "unsupported",
        "lost_after_s",
    ],
    "process": [
        "gpu",
        "pid",
        "user",
        "command",
        "type",
        "workload",
        "start_s",
        "end_s",
        "gpu_memory",
        "util",
        "cpu_percent",
        "rss",
        "container",
        "container_pid",
        "host_visible",
        "warmup_s",
        "memory_ramp_s",
        "eval_every_s",
        "eval_s",
        "checkpoint_every_s",
        "checkpoint_s",
    ],
}


def scenario(rng: Random) -> dict[str, Any]:
    """A scenario that is valid by construction (with values across the allowed ranges)."""
    data: dict[str, Any] = {"seed": rng.choice([0, 7, rng.randint(-(2**63), 2**64 - 1)])}
    if rng.random() < 0.5:
        data["start_timestamp"] = rng.choice([0, 1_767_225_600.5, 1e11])
    if rng.random() < 0.3:
        data["notices"] = ["a notice"]
    cpus = rng.choice([1, 2, 16, 224, rng.randint(1, 4096)])
    data["host"] = {"cpu_count": cpus, "memory_total": size(rng, 8 << 30, 1 << 50)}
    gpus = []
    for _ in range(rng.randint(1, 4)):
        limit = rng.choice([1.0, 75, 350.5, 700, 10_000])
        gpu: dict[str, Any] = {
            "name": rng.choice(["NVIDIA GeForce RTX 3090", "NVIDIA H100 80GB HBM3", "G"]),
            "memory_total": size(rng, 1 << 20, 1 << 50),
            "power_limit_w": limit,
            "max_sm_clock_mhz": rng.choice([1, 1410, 100_000]),
            "max_mem_clock_mhz": rng.choice([1, 1593, 100_000]),
        }
        if rng.random() < 0.3:
            gpu["idle_power_w"] = rng.choice([0, limit / 2])
        if rng.random() < 0.3:
            gpu["unsupported"] = rng.sample(["fan", "ecc", "power", "pcie", "clocks", "pstate"], 2)
        if rng.random() < 0.3:
            gpu["lost_after_s"] = rng.choice([0, 30, 1e9])
        if rng.random() < 0.3:
            gpu["temp_idle_c"], gpu["temp_at_limit_c"] = rng.choice(
                [(-20, 120), (120, -20), (30, 80)]
            )
        gpus.append(gpu)
    data["gpu"] = gpus
    procs = []
    for i in range(rng.randint(0, 6)):
        proc: dict[str, Any] = {
            "gpu": rng.randrange(len(gpus)),
            "pid": 100 + i,
            "command": rng.choice(["python train.py", "x", "'a b' c"]),
            "workload": rng.choice(["training", "inference", "interactive", "graphics"]),
            "gpu_memory": size(rng, 1, 1 << 40),
            "cpu_percent": rng.uniform(0, 100.0 * cpus),
        }
        for key, choices in [
            ("start_s", [-1e9, -100, 0, 5.5]),
            ("warmup_s", [0, 0.001, 30, 1e9]),
            ("memory_ramp_s", [0, 0.001, 1e9]),
            ("util", [0, 100, 37.5]),
        ]:
            if rng.random() < 0.4:
                proc[key] = rng.choice(choices)
        if rng.random() < 0.3:
            proc["eval_every_s"], proc["eval_s"] = rng.choice([(0.002, 0.001), (1e9, 0), (240, 20)])
        if rng.random() < 0.2:
            proc["host_visible"] = False
        procs.append(proc)
    if procs:
        data["process"] = procs
    return data


def mutate_scenario(rng: Random, data: dict[str, Any]) -> dict[str, Any]:
    """`data` with 1-3 fields set to extreme values, removed, or unknown ones added."""
    data = json.loads(json.dumps(data))  # deep copy (no special floats in a valid scenario)
    for _ in range(rng.randint(1, 3)):
        section = rng.choice(list(SCENARIO_FIELDS))
        if section == "":
            table = data
        elif section == "host":
            table = data.setdefault("host", {})
        else:
            tables = data.get(section) or [{}]
            data[section] = tables
            table = rng.choice(tables)
        key = rng.choice(SCENARIO_FIELDS[section] + ["bogus_field"])
        roll = rng.random()
        if roll < 0.15:
            table.pop(key, None)
        elif roll < 0.2:
            table[key] = nested(rng)
        else:
            table[key] = extreme(rng)
    return data


TEXT_NOISE = "[]{}=\"',.#\n\\ 0123456789eE+-_:"


def mutate_text(rng: Random, text: str) -> str:
    """Character-level damage: spans deleted or duplicated, syntax noise, deep brackets."""
    for _ in range(rng.randint(1, 4)):
        n = len(text)
        at = rng.randrange(n + 1)
        op = rng.randrange(6)
        if op == 0 and n:
            text = text[:at] + text[at + rng.randint(1, 20) :]
        elif op == 1:
            text = (
                text[:at]
                + "".join(rng.choice(TEXT_NOISE) for _ in range(rng.randint(1, 8)))
                + text[at:]
            )
        elif op == 2 and n:
            end = min(n, at + rng.randint(1, 200))
            text = text[:end] + text[at:end] + text[end:]
        elif op == 3:
            depth = rng.choice([10, 300, 600])
            text = text[:at] + "\nx = " + "[" * depth + "]" * depth + "\n" + text[at:]
        elif op == 4:
            text = text[:at] + "9" * rng.choice([20, 400, 5000]) + text[at:]
        else:
            text = text[:at]
    return text


def check_scenario(text: str, workdir: Path) -> Outcome:
    """Load the scenario, poll it at several times, render it as text and strict JSON."""
    from gputui.model.snapshot_encode import snapshot_to_json
    from gputui.render.snapshot_text import render
    from gputui.sources.simulated.scenario import load_scenario
    from gputui.sources.simulated.source import SimulatedSource

    path = workdir / "scenario.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        sc = load_scenario(path)
    except UserError as exc:
        return _rejected(exc)
    source = SimulatedSource(sc, clock=lambda: 0.0)
    for t in (0.0, 31.0, 3600.5, 1e9):
        snap = source.snapshot_at(t)
        render(snap, color=False, width=120, source_label="fuzz.toml")
        json.loads(snapshot_to_json(snap), parse_constant=_no_constant)
        for dev in snap.devices:
            s = dev.sample
            if s is None:
                continue
            for name in ("utilization_gpu", "utilization_memory", "fan_pct"):
                value = getattr(s, name)
                if value is not None and not 0 <= value <= 100:
                    return Outcome("wrong-accept", f"GPU {name} outside 0..100 | {value}")
            if s.memory_free is not None and s.memory_free < 0:
                return Outcome("wrong-accept", f"negative memory_free | {s.memory_free}")
            if (
                s.power_w is not None
                and dev.info.power_limit_w is not None
                and not (0 <= s.power_w <= dev.info.power_limit_w)
            ):
                return Outcome(
                    "wrong-accept",
                    f"power outside 0..limit | {s.power_w} / {dev.info.power_limit_w}",
                )
        if snap.host is not None and not all(0 <= c <= 100 for c in snap.host.per_cpu_percent):
            return Outcome("wrong-accept", "per-core CPU outside 0..100 | ")
    return OK


def _no_constant(name: str) -> Any:
    raise AssertionError(f"JSON holds {name}")


def _rejected(exc: UserError) -> Outcome:
    # Judged as the user sees it: `gputui` prints every UserError through visible(), so a
    # newline quoted from a file shows as ^J; the message itself must still be one line.
    from gputui.core.textsafe import visible

    message = visible(str(exc))
    if "\n" in message or "\x1b" in message or exc.exit_code != 2:
        return Outcome("wrong-accept", f"rejection is not one clean line | {message[:80]!r}")
    return Outcome("rejected", message)


def scenario_case(rng: Random) -> str:
    """One scenario-family input: valid, field-mutated or text-mutated."""
    data = scenario(rng)
    roll = rng.random()
    if roll < 0.2:
        return to_toml(data)
    if roll < 0.7:
        return to_toml(mutate_scenario(rng, data))
    return mutate_text(rng, to_toml(data))


# --- models files -----------------------------------------------------------------------

ACTIVATIONS = ["relu", "linear", "softmax", "tanh", "sigmoid"]


def _pos(rng: Random, hi: int = 64) -> int:
    return rng.randint(1, hi)


def _kernel(rng: Random, rank: int) -> Any:
    return rng.randint(1, 3) if rng.random() < 0.5 else [rng.randint(1, 3) for _ in range(rank)]


# Per layer type: the arguments it is given (valid values), and for each argument
# the values Keras refuses. A refused value that gputui accepts is a wrong accept.
POSITIVE_INT_BAD = [0, -5, "abc", 2.5, True]
RATE_BAD = [-0.1, 1.5, "abc", True]
BOOL_BAD = ["maybe", 7, {"x": 1}]
LAYERS: dict[str, tuple[Callable[[Random], dict[str, Any]], dict[str, list[Any]]]] = {
    "Dense": (
        lambda r: {
            "units": _pos(r, 512),
            "activation": r.choice(ACTIVATIONS),
            "use_bias": r.random() < 0.8,
        },
        {
            "units": POSITIVE_INT_BAD,
            "use_bias": BOOL_BAD,
            "activation": ["bogus", 5],
            "lora_rank": [0, -5, "x"],
        },
    ),
    "Conv1D": (
        lambda r: {
            "filters": _pos(r),
            "kernel_size": r.randint(1, 3),
            "padding": r.choice(["valid", "same", "causal"]),
        },
        {
            "filters": POSITIVE_INT_BAD,
            "kernel_size": [0, -1, "x"],
            "strides": [0, -2],
            "padding": ["bogus", 1],
        },
    ),
    "Conv2D": (
        lambda r: {
            "filters": _pos(r),
            "kernel_size": _kernel(r, 2),
            "padding": r.choice(["valid", "same"]),
            "strides": r.choice([1, 2]),
        },
        {
            "filters": POSITIVE_INT_BAD,
            "kernel_size": [0, [0, 3], "x"],
            "dilation_rate": [0, -1],
            "groups": [0, -1],
            "padding": ["causal", "bogus"],
        },
    ),
    "Conv2DTranspose": (
        lambda r: {
            "filters": _pos(r),
            "kernel_size": _kernel(r, 2),
            "padding": r.choice(["valid", "same"]),
            "strides": r.choice([1, 2]),
        },
        {"filters": POSITIVE_INT_BAD, "kernel_size": [0, "x"], "strides": [0, -1]},
    ),
    "DepthwiseConv2D": (
        lambda r: {"kernel_size": _kernel(r, 2), "depth_multiplier": r.randint(1, 2)},
        {"depth_multiplier": POSITIVE_INT_BAD},
    ),
    "SeparableConv2D": (
        lambda r: {"filters": _pos(r), "kernel_size": _kernel(r, 2)},
        {"filters": POSITIVE_INT_BAD, "depth_multiplier": POSITIVE_INT_BAD},
    ),
    "MaxPooling2D": (
        lambda r: {"pool_size": r.choice([2, [2, 2], 3])},
        {"pool_size": [0, -2, "x"], "strides": [0]},
    ),
    "AveragePooling1D": (lambda r: {"pool_size": r.choice([1, 2])}, {"pool_size": [0, -2]}),
    "GlobalAveragePooling2D": (lambda r: {}, {"keepdims": BOOL_BAD}),
    "GlobalMaxPooling1D": (lambda r: {}, {"keepdims": BOOL_BAD}),
    "Flatten": (lambda r: {}, {}),
    "Reshape": (lambda r: {"target_shape": [-1]}, {"target_shape": [[0], [-1, -1], "x", [2.5]]}),
    "Dropout": (
        lambda r: {"rate": r.choice([0.0, 0.25, 0.5])},
        {"rate": RATE_BAD, "noise_shape": ["abc", 5]},
    ),
    "BatchNormalization": (
        lambda r: {"momentum": r.choice([0.9, 0.99])},
        {
            "epsilon": ["abc", -1, 0],
            "momentum": [-5, 2, "abc"],
            "center": BOOL_BAD,
            "scale": BOOL_BAD,
        },
    ),
    "LayerNormalization": (lambda r: {}, {"epsilon": ["abc", -1], "axis": [[-1, -1], "x", 99]}),
    "Activation": (lambda r: {"activation": r.choice(ACTIVATIONS)}, {"activation": ["bogus", 3]}),
    "ReLU": (lambda r: {}, {"max_value": [-1, "x"], "negative_slope": [-1, "x"]}),
    "LeakyReLU": (lambda r: {"negative_slope": 0.2}, {"negative_slope": ["x", -1]}),
    "UpSampling2D": (
        lambda r: {"size": r.choice([2, [2, 2]])},
        {"size": [0, -1, "x"], "interpolation": ["bogus"]},
    ),
    "ZeroPadding2D": (lambda r: {"padding": r.choice([1, [1, 2]])}, {"padding": [-1, "x"]}),
    "Embedding": (
        lambda r: {"input_dim": _pos(r, 20000), "output_dim": _pos(r)},
        {"input_dim": POSITIVE_INT_BAD, "output_dim": POSITIVE_INT_BAD, "mask_zero": BOOL_BAD},
    ),
    "SimpleRNN": (
        lambda r: {"units": _pos(r), "return_sequences": r.random() < 0.5},
        {"units": POSITIVE_INT_BAD},
    ),
    "LSTM": (
        lambda r: {"units": _pos(r), "return_sequences": r.random() < 0.5},
        {
            "units": POSITIVE_INT_BAD,
            "stateful": BOOL_BAD,
            "unroll": [7, "abc"],
            "go_backwards": BOOL_BAD,
            "dropout": RATE_BAD,
            "recurrent_dropout": RATE_BAD,
        },
    ),
    "GRU": (lambda r: {"units": _pos(r)}, {"units": POSITIVE_INT_BAD, "reset_after": BOOL_BAD}),
}
COMMON_BAD = {"trainable": ["maybe", 3]}


# Input rank (per sample) each layer takes -> the rank it gives; None: any rank, kept.
RANKS: dict[str, tuple[int | None, int | None]] = {
    "Dense": (None, None),
    "Dropout": (None, None),
    "BatchNormalization": (None, None),
    "LayerNormalization": (None, None),
    "Activation": (None, None),
    "ReLU": (None, None),
    "LeakyReLU": (None, None),
    "Conv1D": (2, 2),
    "AveragePooling1D": (2, 2),
    "GlobalMaxPooling1D": (2, 1),
    "SimpleRNN": (2, 1),
    "LSTM": (2, 1),
    "GRU": (2, 1),
    "Conv2D": (3, 3),
    "Conv2DTranspose": (3, 3),
    "DepthwiseConv2D": (3, 3),
    "SeparableConv2D": (3, 3),
    "MaxPooling2D": (3, 3),
    "UpSampling2D": (3, 3),
    "ZeroPadding2D": (3, 3),
    "GlobalAveragePooling2D": (3, 1),
    "Flatten": (None, 1),
    "Embedding": (1, 2),
}


def layer(
    rng: Random, rank: int | None = None, first: bool = False
) -> tuple[dict[str, Any], str | None]:
    """A layer table (one that takes `rank` mostly), and the invalid argument planted in it."""
    fitting = [
        k
        for k, (takes, _) in RANKS.items()
        if (takes is None or takes == rank) and (first or k != "Embedding")
    ]
    kind = rng.choice(fitting if fitting and rng.random() < 0.9 else list(LAYERS))
    make, bad = LAYERS[kind]
    raw: dict[str, Any] = {"type": kind, **make(rng)}
    if kind in ("SimpleRNN", "LSTM", "GRU") and rng.random() < 0.5:
        raw["return_sequences"] = True
    planted = None
    if rng.random() < 0.04:
        choices = {**bad, **COMMON_BAD}
        arg = rng.choice(list(choices))
        value = rng.choice(choices[arg])
        raw[arg] = value
        planted = f"{kind}.{arg} = {value!r}"
    elif rng.random() < 0.1:  # a huge (but valid) dimension: must be bounded, or estimated
        dims = [k for k in raw if k in ("units", "filters", "input_dim", "output_dim", "size")]
        if dims:
            raw[rng.choice(dims)] = rng.choice(HUGE_INTS[:5])
    return raw, planted


def model_case(rng: Random) -> tuple[str, list[str]]:
    """A models file and the invalid things planted in it (a valid file has none)."""
    planted: list[str] = []
    models = []
    for m in range(rng.randint(1, 2)):
        before = len(planted)  # what is planted in this model (dropped if its layers are replaced)
        rank = rng.randint(1, 3)
        dims: list[Any] = [rng.choice([1, 4, 28, 32, 80]) for _ in range(rank)]
        roll = rng.random()
        if roll < 0.08:
            i = rng.randrange(rank)
            dims[i] = rng.choice([0, -1])
            planted.append(f"input_shape {dims}")
        elif roll < 0.16:
            dims[rng.randrange(rank)] = rng.choice([2**31, 2**62, 10**18])
        count = rng.choice([1, 2, 4, 8, 12]) if rng.random() < 0.97 else rng.choice([1000, 10_000])
        layers = []
        current: int | None = rank
        for position in range(count):
            raw, bad = layer(rng, current, first=position == 0)
            layers.append(raw)
            _, gives = RANKS.get(raw["type"], (None, 1))
            if raw.get("return_sequences") is True:
                gives = 2
            current = gives if gives is not None else current
            if bad:
                planted.append(bad)
        model: dict[str, Any] = {
            "name": f"m{m}",
            "input_shape": dims,
            "batch_size": rng.choice([1, 32, 128]),
            "optimizer": rng.choice(["sgd", "adam", "rmsprop"]),
            "mode": rng.choice(["train", "inference"]),
            "layers": layers,
        }
        roll = rng.random()
        if roll < 0.06:  # an InputLayer declares the input instead of the model
            del model["input_shape"]
            value = rng.choice([5, "x", [1, 0], [1, *dims], ["?"], [1, *dims, 7]])
            key = "batch_shape" if rng.random() < 0.5 else "shape"
            if key == "shape" and isinstance(value, list) and value[:1] == [1]:
                value = value[1:]
            model["layers"].insert(0, {"type": "InputLayer", key: value})
            shape = value[1:] if key == "batch_shape" and isinstance(value, list) else value
            if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape
            ):
                planted.append(f"InputLayer.{key} = {value!r}")
        elif roll < 0.11:  # a valid but very deep stack: the walk must stay linear (or be capped)
            del planted[before:]  # the generated layers are replaced
            model["input_shape"] = [8]
            model["layers"] = [
                {"type": "Dense", "units": 8} for _ in range(rng.choice([2000, 10_000]))
            ]
        elif roll < 0.14:  # sizes that multiply past 2^63
            del planted[before:]
            model["input_shape"] = [8, 8, 3]
            model["layers"] = [
                {"type": "UpSampling2D", "size": 10 ** rng.choice([3, 9, 18])}
                for _ in range(rng.choice([2, 20]))
            ]
        if rng.random() < 0.05:
            model["layers"][0]["input_shape"] = [d + 1 for d in dims if isinstance(d, int)] or [3]
            planted.append("first layer's input_shape disagrees with the model's")
        models.append(model)
    text = to_toml({"model": models})
    roll = rng.random()
    if roll < 0.05:
        text = text.replace("layers = [", "layers = [" + _value(nested(rng, 500)) + ", ", 1)
        planted.append("nested 500 deep")
    elif roll < 0.15:
        text = mutate_text(rng, text)
        planted.append("text damage (may still be valid)")
    return text, planted


def _culprit(net: Any, shape: tuple[int, ...]) -> str:
    if shape == net.input_shape:
        return "input_shape"
    for i, ls in enumerate(net.layers):
        if ls.output_shape == shape:
            kind = net.raw_layers[i].get("type", "?") if i < len(net.raw_layers) else "?"
            return str(kind)
    return "?"


def check_models(text: str, planted: list[str], workdir: Path) -> Outcome:
    """parse_models + the estimate on an 80 GiB target, then `gputui fit --json` on the file."""
    from gputui.cli import main
    from gputui.fit.core.target import Target
    from gputui.fit.graph.estimate import check
    from gputui.fit.importers.modelsfile import parse_models

    try:
        models = parse_models(text, "fuzz.toml")
    except UserError as exc:
        return _rejected(exc)
    for model in models:
        for net in model.networks:
            shapes = [net.input_shape] + [ls.output_shape for ls in net.layers]
            for shape in shapes:
                if any(d <= 0 for d in shape):
                    culprit = _culprit(net, shape)
                    return Outcome(
                        "wrong-accept", f"shape with a dimension <= 0 from {culprit} | {shape}"
                    )
            if net.params < 0:
                return Outcome("wrong-accept", f"negative parameter count | {net.params}")
        result = check(model, Target("fuzz", 80 << 30))
        for est in result.estimates:
            if est.peak_bytes <= 0 or est.max_batch_size < 0:
                return Outcome(
                    "wrong-accept",
                    f"peak <= 0 or negative max batch | {est.peak_bytes}, {est.max_batch_size}",
                )
    real = [p for p in planted if not p.startswith("text damage")]
    if real:
        what = real[0].split(" = ")[0].split(" [")[0]
        return Outcome("wrong-accept", f"accepted invalid {what} | {real[0]}")
    path = workdir / "models.toml"
    path.write_text(text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["fit", str(path), "--gpu", "RTX 3090", "--json"])
    if code not in (0, 1):
        return Outcome(
            "wrong-accept", f"fit exit {code} after parse_models accepted | {err.getvalue()[:80]!r}"
        )
    json.loads(out.getvalue(), parse_constant=_no_constant)
    return OK


# --- catalogs ---------------------------------------------------------------------------

CARD_NUMBERS = [
    "sm_count",
    "cuda_cores",
    "tensor_cores",
    "boost_clock_mhz",
    "memory_gib",
    "memory_bus_width_bits",
    "memory_data_rate_gbps",
    "memory_bandwidth_gbs",
    "fp32_tflops",
    "fp16_tensor_tflops",
    "bf16_tensor_tflops",
    "tf32_tensor_tflops",
    "int8_tensor_tops",
    "fp8_tensor_tflops",
    "tdp_w",
    "launch_year",
    "launch_price_usd",
]
CARD_TEXT = [
    "name",
    "architecture",
    "compute_capability",
    "segment",
    "memory_type",
    "source",
    "nvml_names",
]


def catalog_case(rng: Random) -> tuple[str, str]:
    """(card file name, mutated TOML text) replacing one shipped card file."""
    from gputui.core.tomlsafe import parse_toml

    files = sorted((CATALOG_DIR / "cards").glob("*.toml"))
    path = rng.choice(files)
    text = path.read_text(encoding="utf-8")
    if rng.random() < 0.25:
        return path.name, mutate_text(rng, text)
    data = parse_toml(text, path.name)
    cards = data["card"]
    for _ in range(rng.randint(1, 3)):
        card = rng.choice(cards)
        key = rng.choice(CARD_NUMBERS + CARD_TEXT + ["bogus"])
        roll = rng.random()
        if roll < 0.1:
            card.pop(key, None)
        elif roll < 0.15:
            card[key] = nested(rng)
        elif key in CARD_NUMBERS and roll < 0.6:
            card[key] = rng.choice(
                [-1, 0, -1e308, 1e308, math.nan, math.inf, -math.inf, 2**64, 10**400]
            )
        else:
            card[key] = extreme(rng)
    return path.name, to_toml(data)


@contextlib.contextmanager
def catalog_copy(name: str, text: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="gputui-fuzz-catalog-") as tmp:
        root = Path(tmp)
        shutil.copy(CATALOG_DIR / "architectures.toml", root / "architectures.toml")
        (root / "cards").mkdir()
        for f in (CATALOG_DIR / "cards").glob("*.toml"):
            shutil.copy(f, root / "cards" / f.name)
        (root / "cards" / name).write_text(text, encoding="utf-8")
        yield root


def check_catalog(name: str, text: str) -> Outcome:
    """The catalog loader, then `gputui catalog --json` and `catalog show` on the copy."""
    from gputui.catalog import load_catalog
    from gputui.cli import main

    with catalog_copy(name, text) as root:
        try:
            catalog = load_catalog(root)
        except UserError as exc:
            return _rejected(exc)
        for card in catalog.cards:
            for field in CARD_NUMBERS:
                value = getattr(card, field, None)
                if value is None or isinstance(value, bool):
                    continue
                finite = isinstance(value, int) or math.isfinite(value)
                if not finite or value <= 0:
                    what = "non-finite" if not finite else "<= 0"
                    return Outcome(
                        "wrong-accept", f"{field} {what} accepted | {card.name}: {value!r}"
                    )
            if card.memory_gib > 1 << 20:
                return Outcome(
                    "wrong-accept",
                    f"memory_gib over 1 PiB accepted | {card.name}: {card.memory_gib!r}",
                )
        out, err, shown = io.StringIO(), io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["catalog", "--catalog-dir", str(root), "--json"])
        if catalog.cards:
            with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(err):
                main(["catalog", "--catalog-dir", str(root), "show", catalog.cards[0].name])
        if code != 0:
            return Outcome(
                "wrong-accept",
                f"catalog --json exit {code} after the loader accepted | {err.getvalue()[:80]!r}",
            )
        try:
            json.loads(out.getvalue(), parse_constant=_no_constant)
        except AssertionError as exc:
            return Outcome("wrong-accept", f"catalog --json is not strict JSON | {exc}")
    return OK
