"""Fuzz family `scenario_text`: scenario files with control characters in every string field.

A fuzz campaign found escape leaks in `gputui snapshot --scenario FILE`.
Each case is a valid scenario (tests/fuzz/generators.py) whose string fields
(host name, versions, notices, GPU name, UUID, bus id, architecture, process
user, command and container) hold C0/C1 controls, DEL, escape sequences, line
separators and bidi overrides, mixed with ordinary text and Rich markup. The
property: `snapshot` as text and as `--json` (parsed back) ends with exit 0, or
2 and one line on stderr, and no forbidden character is written or parsed
back. A leak is a wrong accept: the input was hostile on purpose.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from random import Random
from typing import Any

import generators as gen

FAMILY = "scenario_text"

# What must never reach a terminal raw ("\n" ends lines and is allowed in output).
FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
CONTROLS = (
    [chr(c) for c in range(0x20)]
    + ["\x7f"]
    + [chr(c) for c in range(0x80, 0xA0)]
    + ["\u2028", "\u2029"]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
)
SEQUENCES = [
    "\x1b]0;pwned\x07",
    "\x1b[2J",
    "\x1b[31m",
    "\x9b31m",
    "\x1bP1$r\x1b\\",
    "\x1b]8;;http://x\x07",
]
PLAIN = ["x", "NVIDIA A100", "root", "python train.py", "[red]x[/red]", "é", " "]

TOP_FIELDS = ("hostname", "driver_version", "cuda_driver_version", "nvml_version")
GPU_FIELDS = ("name", "uuid", "pci_bus_id", "architecture")
PROCESS_FIELDS = ("user", "command", "container")


def hostile(rng: Random, limit: int = 60) -> str:
    """Ordinary text with control characters, sequences and bidi overrides planted in it."""
    parts = [rng.choice(PLAIN)]
    for _ in range(rng.randint(1, 5)):
        parts.append(rng.choice(SEQUENCES) if rng.random() < 0.3 else rng.choice(CONTROLS))
        if rng.random() < 0.5:
            parts.append(rng.choice(PLAIN))
    text = "".join(parts)[:limit]
    return text if FORBIDDEN.search(text) else text + "\x1b[0m"


def make_case(rng: Random) -> tuple[str, list[str]]:
    """(scenario TOML, the fields planted with hostile text)."""
    data: dict[str, Any] = gen.scenario(rng)
    planted: list[str] = []
    for key in TOP_FIELDS:
        if rng.random() < 0.7:
            data[key] = hostile(rng)
            planted.append(key)
    if rng.random() < 0.5:
        data["notices"] = [hostile(rng) for _ in range(rng.randint(1, 3))]
        planted.append("notices")
    for i, gpu in enumerate(data["gpu"]):
        for key in GPU_FIELDS:
            if rng.random() < 0.6:
                gpu[key] = hostile(rng)
                planted.append(f"gpu[{i}].{key}")
    for i, proc in enumerate(data.get("process", [])):
        for key in PROCESS_FIELDS:
            if rng.random() < 0.7:
                proc[key] = hostile(rng, 120)
                planted.append(f"process[{i}].{key}")
    if not planted:
        data["hostname"] = hostile(rng)
        planted.append("hostname")
    return gen.to_toml(data), planted


def case_text(case: tuple[str, list[str]]) -> str:
    return f"# planted: {', '.join(case[1])}\n{case[0]}"


def _run(argv: list[str]) -> tuple[int, str, str]:
    from gputui.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _leak(text: str) -> str | None:
    found = FORBIDDEN.search(text)
    if found is None:
        return None
    return f"{found.group()!r} in {text[max(0, found.start() - 30) : found.start() + 10]!r}"


def run_case(case: tuple[str, list[str]], workdir: Path) -> gen.Outcome:
    text, _planted = case
    path = workdir / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    code, out, err = _run(["snapshot", "--scenario", str(path)])
    if code == 2:
        if err.count("\n") != 1 or _leak(err) or out:
            return gen.Outcome("wrong-accept", f"rejection is not one clean line | {err[:80]!r}")
        return gen.Outcome("rejected", err.strip())
    # 3: a GPU of the scenario is lost; the rest is printed, as `fit` does
    if code not in (0, 3) or (code == 3 and "FAILED" not in out):
        return gen.Outcome("wrong-accept", f"snapshot exit {code} | {err[:80]!r}")
    text_code = code
    for where, shown in (("snapshot text", out), ("stderr", err)):
        leak = _leak(shown)
        if leak:
            return gen.Outcome("wrong-accept", f"control character in {where} | {leak}")
    code, out, err = _run(["snapshot", "--scenario", str(path), "--json"])
    if code != text_code:
        return gen.Outcome(
            "wrong-accept",
            f"snapshot --json exit {code} after text exit {text_code} | {err[:80]!r}",
        )
    leak = _leak(out)
    if leak:
        return gen.Outcome("wrong-accept", f"control character in --json | {leak}")
    leak = _leak("\n".join(_strings(json.loads(out))))
    if leak:
        return gen.Outcome("wrong-accept", f"control character in --json parsed back | {leak}")
    return gen.OK
