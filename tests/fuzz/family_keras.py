"""Keras files (JSON and `.keras` zips) made from the real fixtures, then damaged.

Each case starts from a file real Keras wrote (tests/fixtures/keras) and changes
its structure or values: a wrong type at a structural JSON path, absurd input
dimensions, malformed `inbound_nodes` and `keras_history`, duplicate or unknown
names. What the generator knows to be invalid is "planted": gputui accepting it is
a wrong accept. Changes Keras itself accepts (a config name unlike the layer's
name, layers listed before their inputs) are mixed in and planted nothing.
"""

from __future__ import annotations

import copy
import io
import json
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from random import Random
from typing import Any

import generators as gen
from cli_run import cli_outcome, nested_json

FAMILY = "keras"
FIXTURES = gen.REPO / "tests" / "fixtures" / "keras"
MAX_DIM = 2**31 - 1
# Values of the wrong type for a slot that must hold a list, a string, an object or an int.
NOT_LIST: list[Any] = [None, "x", {}, {"a": 1}, 5, 1.5, True]
NOT_STR: list[Any] = [None, 5, 1.5, True, [], ["x"], {}]
NOT_DICT: list[Any] = [None, "x", 5, True, [], [1]]
NOT_INDEX: list[Any] = [None, "0", 1.5, True, -1, 2**64, [], {}]
BAD_DIMS: list[Any] = [
    0,
    -1,
    -(2**31),
    MAX_DIM + 1,
    2**63,
    10**30,
    True,
    False,
    1.5,
    32.0,
    "32",
    [3],
    {},
]
BAD_NODES: list[Any] = [
    None,
    "x",
    {},
    {"args": []},
    5,
    1.5,
    True,
    [None],
    ["x"],
    [5],
    [[None]],
    [[5]],
    [{"args": None}],
    [{"args": "x"}],
    [{"args": 5}],
    [{"kwargs": []}],
    [{"kwargs": "x"}],
    [[["a"]]],
    [[["a", "0", 0]]],
    [[[5, 0, 0]]],
    [[[None, 0, 0, {}]]],
]


@dataclass(frozen=True)
class KerasCase:
    fixture: str
    data: Any  # the (possibly damaged) JSON document
    planted: tuple[str, ...]  # what was made invalid on purpose
    archive: bool  # written as a .keras zip
    args: tuple[str, ...]  # --input-shape / --skip-unknown the fixture needs
    text: str | None = None  # character-damaged JSON, when the case is one


@cache
def _fixtures() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(name, JSON text, CLI arguments) for every fixture, smaller ones first."""
    out = []
    for path in sorted(FIXTURES.rglob("*.json"), key=lambda p: p.stat().st_size):
        if path.name.endswith(".counts.json"):
            continue
        counts = json.loads(path.with_name(path.stem + ".counts.json").read_text(encoding="utf-8"))
        args: list[str] = []
        for name, shape in counts.get("input_shapes", {}).items():
            args += ["--input-shape", f"{name}={','.join(map(str, shape))}"]
        if counts.get("custom_layer_params"):
            args.append("--skip-unknown")
        out.append((str(path.relative_to(FIXTURES)), path.read_text(encoding="utf-8"), tuple(args)))
    return tuple(out)


# --- where things are in a Keras document ------------------------------------------------


def _models(data: Any) -> list[dict[str, Any]]:
    """The model objects of the document: the top one and every nested model."""
    found: list[dict[str, Any]] = []

    def visit(obj: Any) -> None:
        if isinstance(obj, dict) and obj.get("class_name") in ("Functional", "Model", "Sequential"):
            found.append(obj)
            config = obj.get("config")
            layers = config.get("layers") if isinstance(config, dict) else config
            if isinstance(layers, list):
                for item in layers:
                    visit(item)

    visit(data)
    return found


def _layers(data: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(model, layer) for every layer object of every model."""
    out = []
    for model in _models(data):
        config = model.get("config")
        layers = config.get("layers") if isinstance(config, dict) else config
        if isinstance(layers, list):
            out.extend((model, layer) for layer in layers if isinstance(layer, dict))
    return out


def _tensors(node: Any) -> list[Any]:
    """Keras 3 tensor objects and tf.keras 2 entries inside one inbound node."""
    out: list[Any] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("class_name") == "__keras_tensor__":
                out.append(item)
            else:
                stack.extend(item.values())
        elif isinstance(item, list):
            if len(item) >= 3 and isinstance(item[0], str) and isinstance(item[1], int):
                out.append(item)
            else:
                stack.extend(item)
    return out


def _is_input(layer: dict[str, Any]) -> bool:
    return layer.get("class_name") == "InputLayer"


def _called(data: Any) -> list[dict[str, Any]]:
    """Layers of functional models that are called (they have inbound nodes)."""
    return [
        lay
        for _, lay in _layers(data)
        if isinstance(lay.get("inbound_nodes"), list) and lay["inbound_nodes"]
    ]


# --- mutations ------------------------------------------------------------------------------


def _wrong_type(rng: Random, data: Any) -> str | None:
    """A structural field set to a value of the wrong type (always invalid)."""
    slots: list[tuple[Any, Any, list[Any], str]] = [(data, "class_name", NOT_STR, "class_name")]
    slots.append((data, "config", NOT_DICT, "config"))
    for model in _models(data):
        config = model.get("config")
        if isinstance(config, dict):
            slots.append((config, "layers", NOT_LIST, "config.layers"))
            if model.get("class_name") != "Sequential":
                slots.append(
                    (
                        config,
                        "input_layers",
                        [None, "x", 5, {}, [], [["x", 0]], [[None, 0, 0]]],
                        "input_layers",
                    )
                )
                slots.append(
                    (
                        config,
                        "output_layers",
                        [None, "x", 5, {}, [], [["x", 0, 0, 0]], [[5, 0, 0]]],
                        "output_layers",
                    )
                )
    for _, lay in _layers(data):
        slots.append((lay, "class_name", NOT_STR, "layer class_name"))
        slots.append((lay, "config", NOT_DICT, "layer config"))
        if "name" in lay:
            slots.append((lay, "name", NOT_STR, "layer name"))
        if "module" in lay:
            slots.append((lay, "module", [5, True, [], {}], "layer module"))
        if "inbound_nodes" in lay:
            slots.append((lay, "inbound_nodes", NOT_LIST, "inbound_nodes"))
        config = lay.get("config")
        if isinstance(config, dict):
            for key in ("batch_shape", "batch_input_shape"):
                if key in config:
                    slots.append((config, key, ["x", 5, {}, True, [], ["x"], [None, "x"]], key))
        nodes = lay.get("inbound_nodes")
        for node in nodes if isinstance(nodes, list) else []:
            if isinstance(node, dict):
                slots.append((node, "args", ["x", 5, {}, True], "node args"))
                slots.append((node, "kwargs", ["x", 5, [], True], "node kwargs"))
            for tensor in _tensors(node):
                if isinstance(tensor, dict):
                    cfg = tensor.get("config")
                    slots.append((tensor, "config", NOT_DICT, "keras tensor config"))
                    if isinstance(cfg, dict):
                        history = cfg.get("keras_history")
                        four = (
                            [*history, 0]
                            if isinstance(history, list) and len(history) == 3
                            else ["a", 0, 0, 0]
                        )
                        slots.append(
                            (
                                cfg,
                                "keras_history",
                                [None, "x", 5, {}, [], ["a", 0], four],
                                "keras_history",
                            )
                        )
                        if isinstance(history, list) and len(history) == 3:
                            slots.append((history, 0, NOT_STR, "keras_history[0]"))
                            slots.append(
                                (history, rng.choice([1, 2]), NOT_INDEX, "keras_history index")
                            )
                        slots.append(
                            (
                                cfg,
                                "shape",
                                ["x", 5, {}, True, ["x"], [None, -3], [None, 1.5]],
                                "keras tensor shape",
                            )
                        )
                elif tensor[0] != "_CONSTANT_VALUE":
                    slots.append((tensor, 0, NOT_STR, "tf.keras 2 entry name"))
                    slots.append((tensor, rng.choice([1, 2]), NOT_INDEX, "tf.keras 2 entry index"))
    owner, key, values, what = rng.choice(slots)
    value = copy.deepcopy(rng.choice(values))
    owner[key] = value
    return f"{what} = {value!r:.40}"


def _absurd_dims(rng: Random, data: Any) -> str | None:
    """An input dimension that cannot be (0, negative, huge, a bool, a float), or a huge product."""
    configs = []
    for _, lay in _layers(data):
        config = lay.get("config")
        if isinstance(config, dict):
            for key in ("batch_shape", "batch_input_shape"):
                if isinstance(config.get(key), list) and len(config[key]) > 1:
                    configs.append((config, key))
    if not configs:
        return None
    config, key = rng.choice(configs)
    shape = config[key]
    if rng.random() < 0.25:
        config[key] = [None] + [2**20] * max(3, len(shape) - 1)
        return f"{key} = {config[key]!r} (over MAX_ELEMENTS)"
    axis = rng.randrange(1, len(shape))
    shape[axis] = rng.choice(BAD_DIMS)
    return f"{key}[{axis}] = {shape[axis]!r}"


def _bad_nodes(rng: Random, data: Any) -> str | None:
    called = _called(data)
    if not called:
        return None
    lay = rng.choice(called)
    value = copy.deepcopy(rng.choice(BAD_NODES))
    lay["inbound_nodes"] = value
    return f"inbound_nodes of {lay.get('name')!r} = {value!r:.40}"


def _bad_history(rng: Random, data: Any) -> str | None:
    """A reference to a layer that is not there, or past the calls it has."""
    called = _called(data)
    if not called:
        return None
    tensors = [t for lay in called for node in lay["inbound_nodes"] for t in _tensors(node)]
    histories = [_history(t) for t in tensors]
    histories = [h for h in histories if h is not None and h[0] != "_CONSTANT_VALUE"]
    if not histories:
        return None
    history = rng.choice(histories)
    if rng.random() < 0.5:
        history[0] = "no_such_layer_" + str(rng.randrange(100))
        return f"keras_history names an unknown layer {history[0]!r}"
    history[1] = rng.choice([7, 99, 2**40])
    return f"keras_history takes call {history[1]} of {history[0]!r}"


def _history(tensor: Any) -> list[Any] | None:
    """The [layer, node, tensor] list of a Keras 3 tensor or tf.keras 2 entry, if well formed."""
    if isinstance(tensor, dict):
        config = tensor.get("config")
        tensor = config.get("keras_history") if isinstance(config, dict) else None
    if isinstance(tensor, list) and len(tensor) >= 3 and isinstance(tensor[0], str):
        return tensor
    return None


def _duplicate_name(rng: Random, data: Any) -> str | None:
    pairs = [(m, lay) for m, lay in _layers(data) if isinstance(lay.get("name"), str)]
    if len(pairs) < 2:
        return None
    model, lay = rng.choice(pairs)
    others = [o for m, o in pairs if m is model and o is not lay and isinstance(o.get("name"), str)]
    if not others:
        return None
    other = rng.choice(others)
    lay["name"] = other["name"]
    return f"layer name {other['name']!r} used twice"


def _keras_rules(rng: Random, data: Any) -> None:
    """Changes Keras accepts: a config name unlike the layer's, layers before their inputs."""
    for _, lay in _layers(data):
        config = lay.get("config")
        if "name" in lay and isinstance(config, dict) and rng.random() < 0.2:
            config["name"] = f"renamed_{rng.randrange(1000)}"
    for model in _models(data):
        config = model.get("config")
        if (
            model.get("class_name") != "Sequential"
            and isinstance(config, dict)
            and rng.random() < 0.5
        ):
            layers = config.get("layers")
            if isinstance(layers, list):
                rng.shuffle(layers)


def _random_path(rng: Random, data: Any) -> None:
    """Any value anywhere set to an extreme one (not always invalid: nothing planted)."""
    paths: list[tuple[Any, Any]] = []
    stack = [data]
    while stack and len(paths) < 20000:
        item = stack.pop()
        keys = (
            list(item)
            if isinstance(item, dict)
            else range(len(item))
            if isinstance(item, list)
            else []
        )
        for key in keys:
            paths.append((item, key))
            stack.append(item[key])
    if paths:
        owner, key = rng.choice(paths)
        owner[key] = gen.extreme(rng) if rng.random() < 0.8 else nested_json(rng)


def _delete_key(rng: Random, data: Any) -> None:
    """A field the reader follows taken out (some are optional: nothing planted)."""
    keys = (
        "class_name",
        "config",
        "name",
        "inbound_nodes",
        "layers",
        "keras_history",
        "args",
        "kwargs",
        "input_layers",
        "output_layers",
        "batch_shape",
        "batch_input_shape",
        "shape",
    )
    owners: list[dict[str, Any]] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if any(k in item for k in keys):
                owners.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    if owners:
        owner = rng.choice(owners)
        owner.pop(rng.choice([k for k in keys if k in owner]))


def _layer_argument(rng: Random, data: Any) -> None:
    """One argument of one layer's config set to an extreme or deeply nested value."""
    configs = [lay["config"] for _, lay in _layers(data) if isinstance(lay.get("config"), dict)]
    configs = [c for c in configs if c]
    if configs:
        config = rng.choice(configs)
        key = rng.choice(list(config))
        config[key] = gen.extreme(rng) if rng.random() < 0.7 else nested_json(rng)


MUTATIONS = [
    (_wrong_type, 0.3),
    (_absurd_dims, 0.2),
    (_bad_nodes, 0.2),
    (_bad_history, 0.1),
    (_duplicate_name, 0.05),
]


def make_case(rng: Random) -> KerasCase:
    fixtures = _fixtures()
    # smaller fixtures more often: each case runs the whole estimate
    # (hypothesis' Random can draw an infinite variate: clamp before int())
    pick = min(rng.expovariate(1 / 6), len(fixtures) - 1)
    name, text, args = fixtures[int(pick)]
    data = json.loads(text)
    archive = rng.random() < 0.2
    roll = rng.random()
    if roll < 0.05:
        return KerasCase(name, None, (), archive, args, gen.mutate_text(rng, text))
    if rng.random() < 0.5:
        _keras_rules(rng, data)
    planted: list[str] = []
    if roll < 0.15:
        pass  # valid (after the changes Keras accepts)
    elif roll < 0.4:
        rng.choice([_random_path, _delete_key, _layer_argument])(rng, data)
    else:
        for _ in range(rng.choice([1, 1, 1, 2])):
            funcs, weights = zip(*MUTATIONS, strict=True)
            what = rng.choices(funcs, weights)[0](rng, data)
            if what is not None:
                planted.append(what)
    return KerasCase(name, data, tuple(planted), archive, args)


def case_text(case: KerasCase) -> str | bytes:
    text = case.text if case.text is not None else json.dumps(case.data)
    if not case.archive:
        return text
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        archive.writestr("config.json", text)
    return buffer.getvalue()


def run_case(case: KerasCase, workdir: Path) -> gen.Outcome:
    """`gputui fit FILE --gpu "RTX 3090"` in process: exit 0/1 with output, or 2 and one line."""
    from gputui.cli import main

    content = case_text(case)
    path = workdir / ("model.keras" if case.archive else "model.json")
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return cli_outcome(
        main, ["fit", str(path), "--gpu", "RTX 3090", *case.args], list(case.planted)
    )
