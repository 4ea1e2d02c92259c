"""How `gputui fit` scales with the number of layers in a graph (issue 22, "Large graphs").

Three Keras-style graphs are written at each size, in both formats the layer engine
reads (a models TOML and a Keras 3 `model.to_json()` document):

- `transformer`: a pre-norm transformer written out as Keras layers (LayerNormalization,
  MultiHeadAttention, Dropout, residual Add, a Dense feed-forward), blocks repeated to
  the size;
- `unetpp`: U-Net++-like units (nested skips, every decoder node a Concatenate of all
  the nodes to its left and an upsampled one from below, deep supervision summed by
  an Add), chained to the size;
- `stack`: a plain deep sequential stack (Dense, BatchNormalization, ReLU, Dropout).

Each file is checked by the CLI in process (`gputui.cli.main`) for one card
(`--gpu "H100 SXM"`) and for every catalog card (`--all-cards`), and the printed row is:
seconds, ms per layer, the per-layer cost against the 1,000-layer one (1.0 = linear),
and the peak RSS growth of a fresh child process that ran that one check. With
`--baseline DIR` (a `git archive REV src catalog | tar -x -C DIR` copy) the same checks run on
that code in the same run, side by side (sizes the baseline refuses show its error).

Run:  PYTHONPATH=src python benchmarks/large_graphs.py [--baseline /tmp/base] [--sizes ...]
Aim:  linear in layers; 10,000 layers in under 1 s for one card, under 3 s for all cards.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SIZES = (1000, 3000, 5000, 10000, 20000)
AIM_ONE, AIM_ALL, AIM_AT = 1.0, 3.0, 10000
CARD = "H100 SXM"

Layer = dict[str, Any]  # models-file functional syntax: name, type, inputs, Keras arguments


# ---------------------------------------------------------------- the graphs


def _pad(layers: list[Layer], n: int) -> list[Layer]:
    """Exactly `n` layers: identity activations appended after the last one."""
    last = layers[-1]["name"]
    k = 0
    while len(layers) < n:
        name = f"pad_{k}"
        layers.append(
            {"name": name, "type": "Activation", "activation": "linear", "inputs": [last]}
        )
        last, k = name, k + 1
    return layers


def transformer(n: int) -> tuple[list[Layer], list[Layer], list[str]]:
    """Inputs, layers and outputs of a pre-norm transformer of about `n` layers."""
    d, seq = 64, 128
    inputs = [{"name": "tokens", "shape": [seq], "dtype": "int32"}]
    layers: list[Layer] = [
        {
            "name": "embed",
            "type": "Embedding",
            "input_dim": 8000,
            "output_dim": d,
            "inputs": ["tokens"],
        }
    ]
    x, b = "embed", 0
    while len(layers) + 9 + 2 <= n:
        p = f"b{b}_"
        layers += [
            {"name": p + "ln1", "type": "LayerNormalization", "epsilon": 1e-6, "inputs": [x]},
            {
                "name": p + "mha",
                "type": "MultiHeadAttention",
                "num_heads": 4,
                "key_dim": 16,
                "inputs": [p + "ln1", p + "ln1"],
            },
            {"name": p + "drop1", "type": "Dropout", "rate": 0.1, "inputs": [p + "mha"]},
            {"name": p + "res1", "type": "Add", "inputs": [x, p + "drop1"]},
            {
                "name": p + "ln2",
                "type": "LayerNormalization",
                "epsilon": 1e-6,
                "inputs": [p + "res1"],
            },
            {
                "name": p + "ff1",
                "type": "Dense",
                "units": 4 * d,
                "activation": "gelu",
                "inputs": [p + "ln2"],
            },
            {"name": p + "ff2", "type": "Dense", "units": d, "inputs": [p + "ff1"]},
            {"name": p + "drop2", "type": "Dropout", "rate": 0.1, "inputs": [p + "ff2"]},
            {"name": p + "res2", "type": "Add", "inputs": [p + "res1", p + "drop2"]},
        ]
        x, b = p + "res2", b + 1
    layers = _pad(layers, n - 2)
    layers += [
        {"name": "pool", "type": "GlobalAveragePooling1D", "inputs": [layers[-1]["name"]]},
        {
            "name": "probs",
            "type": "Dense",
            "units": 10,
            "activation": "softmax",
            "inputs": ["pool"],
        },
    ]
    return inputs, layers, ["probs"]


def _unet_unit(u: int, x: str, depth: int, ch: int) -> tuple[list[Layer], str]:
    """One U-Net++ unit on tensor `x` (16 x 16 spatial): nodes X[i][j], i + j <= depth."""
    layers: list[Layer] = []
    node: dict[tuple[int, int], str] = {}

    def conv(name: str, src: str, filters: int) -> str:
        layers.extend(
            [
                {
                    "name": name + "_c",
                    "type": "Conv2D",
                    "filters": filters,
                    "kernel_size": [3, 3],
                    "padding": "same",
                    "inputs": [src],
                },
                {"name": name + "_bn", "type": "BatchNormalization", "inputs": [name + "_c"]},
                {"name": name + "_r", "type": "ReLU", "inputs": [name + "_bn"]},
            ]
        )
        return name + "_r"

    p = f"u{u}_"
    src = x
    for i in range(depth + 1):
        if i:
            layers.append(
                {
                    "name": f"{p}pool{i}",
                    "type": "MaxPooling2D",
                    "pool_size": [2, 2],
                    "inputs": [node[(i - 1, 0)]],
                }
            )
            src = f"{p}pool{i}"
        node[(i, 0)] = conv(f"{p}x{i}0", src, ch << i)
    for j in range(1, depth + 1):
        for i in range(depth + 1 - j):
            up = f"{p}up{i}{j}"
            layers.append(
                {
                    "name": up,
                    "type": "UpSampling2D",
                    "size": [2, 2],
                    "inputs": [node[(i + 1, j - 1)]],
                }
            )
            cat = f"{p}cat{i}{j}"
            layers.append(
                {
                    "name": cat,
                    "type": "Concatenate",
                    "inputs": [*(node[(i, k)] for k in range(j)), up],
                }
            )
            node[(i, j)] = conv(f"{p}x{i}{j}", cat, ch << i)
    heads = []
    for j in range(1, depth + 1):  # deep supervision: a 1x1 head on every top node, summed
        layers.append(
            {
                "name": f"{p}head{j}",
                "type": "Conv2D",
                "filters": ch,
                "kernel_size": [1, 1],
                "inputs": [node[(0, j)]],
            }
        )
        heads.append(f"{p}head{j}")
    layers.append({"name": f"{p}sum", "type": "Add", "inputs": heads})
    return layers, f"{p}sum"


def unetpp(n: int) -> tuple[list[Layer], list[Layer], list[str]]:
    """Chained U-Net++ units (depth 3, 8 channels on 16 x 16) to about `n` layers."""
    inputs = [{"name": "image", "shape": [16, 16, 3]}]
    layers: list[Layer] = []
    x, u = "image", 0
    while True:
        unit, out = _unet_unit(u, x, 3, 8)
        if len(layers) + len(unit) + 1 > n:
            break
        layers += unit
        x, u = out, u + 1
    if not layers:
        layers.append(
            {
                "name": "stem",
                "type": "Conv2D",
                "filters": 8,
                "kernel_size": [3, 3],
                "padding": "same",
                "inputs": ["image"],
            }
        )
    layers = _pad(layers, n - 1)
    layers.append(
        {
            "name": "mask",
            "type": "Conv2D",
            "filters": 1,
            "kernel_size": [1, 1],
            "activation": "sigmoid",
            "inputs": [layers[-1]["name"]],
        }
    )
    return inputs, layers, ["mask"]


def stack(n: int) -> tuple[list[Layer], list[Layer], list[str]]:
    """A deep sequential stack of Dense / BatchNormalization / ReLU / Dropout, `n` layers."""
    layers: list[Layer] = []
    cycle = [
        {"type": "Dense", "units": 256},
        {"type": "BatchNormalization"},
        {"type": "ReLU"},
        {"type": "Dropout", "rate": 0.1},
    ]
    for i in range(n - 1):
        layers.append({"name": f"l{i}", **cycle[i % len(cycle)]})
    layers.append({"name": "probs", "type": "Dense", "units": 10, "activation": "softmax"})
    prev = "input"
    for layer in layers:
        layer["inputs"] = [prev]
        prev = layer["name"]
    return [{"name": "input", "shape": [512]}], layers, ["probs"]


GRAPHS: dict[str, Callable[[int], tuple[list[Layer], list[Layer], list[str]]]] = {
    "transformer": transformer,
    "unetpp": unetpp,
    "stack": stack,
}


# ---------------------------------------------------------------- the two formats


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def models_toml(kind: str, n: int) -> str:
    inputs, layers, outputs = GRAPHS[kind](n)
    head = [
        "[[model]]",
        f'name = "{kind}-{n}"',
        "batch_size = 32",
        'optimizer = "adam"',
        'mode = "train"',
    ]
    if kind == "stack":  # the sequential syntax: no names, every layer reads the one before
        seq = [{k: v for k, v in lay.items() if k not in ("name", "inputs")} for lay in layers]
        head.append(f"input_shape = {_toml_value(inputs[0]['shape'])}")
        body = ",\n".join("  " + _toml_value(lay) for lay in seq)
    else:
        head += [
            'kind = "functional"',
            f"inputs = {_toml_value(inputs)}",
            f"outputs = {_toml_value(outputs)}",
        ]
        body = ",\n".join("  " + _toml_value(lay) for lay in layers)
    return "\n".join(head) + "\nlayers = [\n" + body + ",\n]\n"


_MERGES = {"Add", "Concatenate", "Subtract", "Multiply", "Average", "Maximum", "Minimum"}


def _tensor(name: str) -> dict[str, Any]:
    return {"class_name": "__keras_tensor__", "config": {"keras_history": [name, 0, 0]}}


def keras_json(kind: str, n: int) -> str:
    """The same graph as Keras 3 `model.to_json()` writes it (shapes left to the importer)."""
    inputs, layers, outputs = GRAPHS[kind](n)
    out: list[dict[str, Any]] = []
    for inp in inputs:
        cfg = {
            "batch_shape": [None, *inp["shape"]],
            "dtype": inp.get("dtype", "float32"),
            "name": inp["name"],
        }
        out.append(
            {
                "module": "keras.layers",
                "class_name": "InputLayer",
                "config": cfg,
                "name": inp["name"],
                "inbound_nodes": [],
            }
        )
    for lay in layers:
        args = {k: v for k, v in lay.items() if k not in ("name", "type", "inputs")}
        srcs = [_tensor(s) for s in lay["inputs"]]
        call = [srcs] if lay["type"] in _MERGES else srcs
        out.append(
            {
                "module": "keras.layers",
                "class_name": lay["type"],
                "config": {"name": lay["name"], "trainable": True, **args},
                "name": lay["name"],
                "inbound_nodes": [{"args": call, "kwargs": {}}],
            }
        )
    doc = {
        "module": "keras.src.models.functional",
        "class_name": "Functional",
        "config": {
            "name": f"{kind}_{n}",
            "trainable": True,
            "layers": out,
            "input_layers": [[i["name"], 0, 0] for i in inputs],
            "output_layers": [[o, 0, 0] for o in outputs],
        },
    }
    return json.dumps(doc)


# ---------------------------------------------------------------- running the CLI


def _cli(argv: list[str]) -> tuple[int, float, float, str]:
    """Exit code, wall and CPU seconds, last stderr line of `gputui ARGV` run in process."""
    from gputui import cli

    out, err = io.StringIO(), io.StringIO()
    wall, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except SystemExit as exc:
            rc = int(exc.code or 0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    lines = err.getvalue().strip().splitlines()
    return int(rc or 0), wall, cpu, lines[-1] if lines else ""


def child(path: Path, repeat: int) -> dict[str, Any]:
    """In a fresh interpreter (gputui from the first sys.path entry): warm up on a small
    graph of the same kind (imports, catalog), then time one card and all cards and
    report the peak RSS growth over the warm state."""
    warm = path.with_name("warm" + path.suffix)
    for cmd in _argvs(warm).values():
        _cli(cmd)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result: dict[str, Any] = {}
    for which, cmd in _argvs(path).items():
        best: tuple[int, float, float, str] | None = None
        for _ in range(repeat):
            got = _cli(cmd)
            if best is None or got[2] < best[2]:
                best = got
        assert best is not None
        result[which] = best
    result["rss_mib"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    return result


def _argvs(path: Path) -> dict[str, list[str]]:
    return {"one": ["fit", str(path), "--gpu", CARD], "all": ["fit", str(path), "--all-cards"]}


def measure(src: Path, path: Path, repeat: int) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, __file__, "--child", str(src), str(path), str(repeat)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": ""},
    )
    if res.returncode != 0:
        raise RuntimeError(f"benchmark child failed on {path}:\n{res.stderr[-3000:]}")
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def _cell(got: list[Any], n: int, ref: float | None, aim: float | None) -> tuple[str, float]:
    rc, _wall, cpu, _msg = got
    if rc not in (0, 1):
        return f"{'rc ' + str(rc):>23}", 0.0
    ms = cpu * 1000 / n
    mark = "*" if aim is not None and cpu > aim else " "
    lin = ms / ref if ref else 1.0
    return f"{cpu:>8.2f}{mark}{ms:>8.3f}{lin:>6.2f}", ms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--graphs", nargs="+", choices=list(GRAPHS), default=list(GRAPHS))
    ap.add_argument("--formats", nargs="+", choices=["toml", "json"], default=["toml", "json"])
    ap.add_argument("--baseline", type=Path, help="a copy of the old code (DIR/src, DIR/catalog)")
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs per check")
    args = ap.parse_args(argv)
    sizes = sorted(set(args.sizes))
    codes = [("new", ROOT / "src")]
    if args.baseline is not None:
        codes.append(("baseline", args.baseline / "src"))
    print(
        f"aim: linear in layers; {AIM_AT:,} layers under {AIM_ONE:g} s for one card ({CARD}), "
        f"under {AIM_ALL:g} s for --all-cards.\nCPU seconds of the check in process (after a "
        f"warm-up), ms per layer, lin = ms/layer over the {sizes[0]:,}-layer one (1.00 = "
        "linear), MiB = peak RSS growth; * = over the aim"
    )
    cols = f"{'one s':>8} {'ms/l':>8}{'lin':>6}{'all s':>8} {'ms/l':>8}{'lin':>6}{'MiB':>6}"
    head = f"{'graph':<12}{'fmt':<5}{'layers':>7}"
    print(" " * len(head) + "".join(f" |{code:^{len(cols)}}" for code, _ in codes))
    print(head + "".join(f" |{cols}" for _ in codes))
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.graphs:
            for fmt in args.formats:
                text = models_toml if fmt == "toml" else keras_json
                Path(tmp, f"warm.{fmt}").write_text(text(kind, 200))
                ref: dict[tuple[str, str], float] = {}
                for n in sizes:
                    path = Path(tmp) / f"{kind}-{n}.{fmt}"
                    path.write_text(text(kind, n))
                    row = f"{kind:<12}{fmt:<5}{n:>7}"
                    for code, src in codes:
                        got = measure(src, path, args.repeat)
                        row += " |"
                        rc, _, _, msg = got["one"]
                        if rc not in (0, 1):  # the old bound: say so once, across the row
                            row += f" refused: {msg.split('; ')[-1][:42]}"
                            failed = failed or code == "new"
                            continue
                        for which in ("one", "all"):
                            aim = None
                            if n == AIM_AT and code == "new":
                                aim = AIM_ONE if which == "one" else AIM_ALL
                            cell, ms = _cell(got[which], n, ref.get((code, which)), aim)
                            if ms and (code, which) not in ref:
                                ref[(code, which)] = ms
                            failed = failed or (code == "new" and not ms)
                            row += cell
                        row += f"{got['rss_mib']:>6.0f}"
                    print(row, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        sys.path.insert(0, sys.argv[2])
        print(json.dumps(child(Path(sys.argv[3]), int(sys.argv[4]))))
        sys.exit(0)
    sys.exit(main())
