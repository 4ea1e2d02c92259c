"""Functional graphs in the models TOML: references, blocks, shared layers, names.

Each case is a `kind = "functional"` model built valid by construction (every
tensor a vector of one width, so any reference fits any layer), with planted
faults the models file must refuse: malformed references (`NAME:-1`, `NAME:0:0`,
`NAME:`, `NAME:01`, a 2**64 index, an index past the outputs), unknown names,
duplicate names (layers, inputs, block inputs, models), blocks nested past
MAX_BLOCK_DEPTH and blocks calling each other. A depth limit reported as a cycle
is counted as a failure too: the message would send the user after a bug that
is not there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Any

import generators as gen
from cli_run import cli_outcome

FAMILY = "toml_graph"
MAX_BLOCK_DEPTH = 16
# Malformed ways to write output i of NAME (the syntax is NAME or NAME:i, i decimal).
BAD_SUFFIXES = [
    ":-1",
    ":0:0",
    ":",
    ":+1",
    ":01",
    ":00",
    f":{2**64}",
    ":1e3",
    ": 1",
    ":1 ",
    ":\u00b2",
    ":\u0661",
    ":0x1",
    ":1.0",
    "::",
    ":-0",
]


@dataclass(frozen=True)
class GraphCase:
    text: str
    planted: tuple[str, ...]
    depth_fault: bool  # blocks nested too deep: the rejection must say so


class _Graph:
    """One model being generated: what is defined so far and how many outputs each has."""

    def __init__(self, rng: Random, width: int) -> None:
        self.rng = rng
        self.width = width
        self.available: list[tuple[str, int]] = []
        self.planted: list[str] = []
        self.counter = 0

    def name(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def ref(self, pool: list[tuple[str, int]] | None = None) -> str:
        name, count = self.rng.choice(pool or self.available)
        k = self.rng.randrange(count)
        return f"{name}:{k}" if k or self.rng.random() < 0.2 else name

    def bad_ref(self, pool: list[tuple[str, int]] | None = None) -> str:
        name, count = self.rng.choice(pool or self.available)
        roll = self.rng.random()
        if roll < 0.6:
            ref = name + self.rng.choice(BAD_SUFFIXES)
        elif roll < 0.85:
            ref = f"{name}:{count + self.rng.choice([0, 1, 98])}"
        else:
            ref = f"no_such_{self.rng.randrange(100)}"
        self.planted.append(f"reference {ref!r}")
        return ref


@dataclass
class _Blocks:
    tables: dict[str, Any]  # b0, b1, ...: each b_k calls b_(k-1)
    cycle: bool = False  # b0 calls the last one
    twice: int | None = None  # the block whose input names repeat one


def _blocks(rng: Random, width: int) -> _Blocks:
    tables: dict[str, Any] = {}
    depth = rng.choice([1, 1, 2, 3, MAX_BLOCK_DEPTH, MAX_BLOCK_DEPTH + 1, MAX_BLOCK_DEPTH + 4])
    for k in range(depth):
        two = rng.random() < 0.3
        inputs = ["x", "y"] if two else ["x"]
        layers: list[dict[str, Any]] = []
        if k > 0:
            args = ["x"] * len(tables[f"b{k - 1}"]["inputs"])
            layers.append({"name": "inner", "block": f"b{k - 1}", "inputs": args})
            last = "inner"
        else:
            layers.append({"name": "d", "type": "Dense", "units": width, "inputs": ["x"]})
            last = "d"
        if two:
            layers.append({"name": "sum", "type": "Add", "inputs": [last, "y"]})
            last = "sum"
        outputs = [last, "x"] if rng.random() < 0.3 else [last]
        tables[f"b{k}"] = {"inputs": inputs, "layers": layers, "outputs": outputs}
    out = _Blocks(tables)
    if rng.random() < 0.05 and depth > 1:
        n_in = len(tables[f"b{depth - 1}"]["inputs"])
        call = {"name": "loop", "block": f"b{depth - 1}", "inputs": ["x"] * n_in}
        tables["b0"]["layers"].insert(0, call)
        out.cycle = True
    if rng.random() < 0.05:
        out.twice = rng.randrange(depth)
        table = tables[f"b{out.twice}"]
        table["inputs"] = [*table["inputs"], table["inputs"][0]]
    return out


def _model(rng: Random, index: int) -> tuple[dict[str, Any], list[str], bool]:
    g = _Graph(rng, rng.choice([4, 8, 16]))
    inputs: list[dict[str, Any]] = []
    for k in range(rng.randint(1, 3)):
        inputs.append({"name": f"in{k}", "shape": [g.width]})
        g.available.append((f"in{k}", 1))
    layers: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        inputs.append({"name": "seq", "shape": [rng.randint(1, 6), g.width]})
        lstm = {"name": "lstm", "type": "LSTM", "units": g.width, "return_state": True}
        layers.append({**lstm, "inputs": ["seq"]})
        g.available.append(("lstm", 3))
    blocks = _blocks(rng, g.width) if rng.random() < 0.5 else _Blocks({})
    tables = blocks.tables
    dense: list[str] = []

    def call(block: str, refer: Any) -> None:
        name = g.name("call")
        args = [refer() for _ in tables[block]["inputs"]]
        layers.append({"name": name, "block": block, "inputs": args})
        g.available.append((name, len(tables[block]["outputs"])))

    for _ in range(rng.randint(1, 8)):
        refer = g.bad_ref if rng.random() < 0.08 else g.ref
        roll = rng.random()
        if roll < 0.4 or not layers:
            name = g.name("dense")
            layers.append({"name": name, "type": "Dense", "units": g.width, "inputs": [refer()]})
            dense.append(name)
            g.available.append((name, 1))
        elif roll < 0.6:
            name = g.name("add")
            layers.append({"name": name, "type": "Add", "inputs": [refer(), g.ref()]})
            g.available.append((name, 1))
        elif roll < 0.8 and tables:
            call(rng.choice(list(tables)), refer)
        elif dense:
            name = g.name("again")
            layers.append({"name": name, "reuse": rng.choice(dense), "inputs": [refer()]})
            g.available.append((name, 1))
    deepest = f"b{len(tables) - 1}"
    if len(tables) > MAX_BLOCK_DEPTH and rng.random() < 0.8:
        call(deepest, g.ref)  # the chain is called from its top
    called = [int(lay["block"][1:]) for lay in layers if "block" in lay]
    reach = max(called, default=-1)
    too_deep = False
    if blocks.cycle and called:
        g.planted.append("blocks calling each other")
    elif reach + 1 > MAX_BLOCK_DEPTH:
        g.planted.append(f"blocks nested {reach + 1} deep")
        too_deep = True
    if blocks.twice is not None and (blocks.twice <= reach or blocks.cycle and called):
        g.planted.append(f"an input name of block b{blocks.twice} used twice")
    outputs = [g.bad_ref() if rng.random() < 0.05 else g.ref() for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.06 and len(layers) > 1:
        a, b = rng.sample(layers, 2)
        b["name"] = a["name"]
        g.planted.append(f"layer name {a['name']!r} used twice")
    if rng.random() < 0.03:
        layers[0]["name"] = inputs[0]["name"]
        g.planted.append(f"layer named like input {inputs[0]['name']!r}")
    if rng.random() < 0.03 and len(inputs) > 1:
        inputs[1]["name"] = inputs[0]["name"]
        g.planted.append("input name used twice")
    model: dict[str, Any] = {
        "name": f"graph{index}",
        "kind": "functional",
        "batch_size": rng.choice([1, 8, 32]),
        "inputs": inputs,
        "layers": layers,
        "outputs": outputs,
    }
    if tables:
        model["blocks"] = tables
    return model, g.planted, too_deep


def make_case(rng: Random) -> GraphCase:
    models, planted, depth_fault = [], [], False
    for index in range(rng.choice([1, 1, 1, 2])):
        model, found, deep = _model(rng, index)
        models.append(model)
        planted += found
        depth_fault = depth_fault or deep
    if len(models) == 2 and rng.random() < 0.2:
        models[1]["name"] = models[0]["name"]
        planted.append(f"model name {models[0]['name']!r} used twice")
    return GraphCase(gen.to_toml({"model": models}), tuple(planted), depth_fault)


def case_text(case: GraphCase) -> str:
    return case.text


def run_case(case: GraphCase, workdir: Path) -> gen.Outcome:
    from gputui.cli import main

    path = workdir / "models.toml"
    path.write_text(case.text, encoding="utf-8")
    outcome = cli_outcome(main, ["fit", str(path), "--gpu", "RTX 3090"], list(case.planted))
    if case.depth_fault and outcome.kind == "rejected" and "calls itself" in outcome.detail:
        return gen.Outcome("wrong-accept", f"depth limit reported as a cycle | {outcome.detail}")
    return outcome
