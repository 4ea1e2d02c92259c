"""Measure Keras 3 on its torch backend (CPU) and compare with `gputui fit --runtime keras-torch`.

Each case builds a Keras model (a keras.applications model with weights=None, or a
fixture of tests/fixtures/keras), runs a few steps as a Keras user does
(`predict_on_batch` for inference; `compile(optimizer=...)` and `train_on_batch` for
training; for a GAN the classic loop: D on real then generated images, G through a
frozen D) and measures the peak tensor memory with the profiler's allocation events
(benchmarks/torch_memory.py) in a fresh process, plus the bytes of the variables the
model was built with before (Keras' initializers make weight-sized temporaries once,
which in a small model would be the peak instead of the step).
The estimate is the layer walk for the runtime named (tensor memory, `cpu` backend)
of the model's own `to_json()`, read by gputui's Keras importer.

Needs torch and keras:  .venv/bin/pip install torch==2.13.0 keras
Run:  .venv/bin/python benchmarks/keras_runtime.py [--case NAME] [--runtime keras-torch]
      [--markdown]
Set nothing else: the script sets KERAS_BACKEND=torch and a private KERAS_HOME itself.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

os.environ["KERAS_BACKEND"] = "torch"
os.environ.setdefault("KERAS_HOME", tempfile.mkdtemp(prefix="gputui-keras-home-"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from gputui.fit.core.breakdown import peak_phase as peak  # noqa: E402
from gputui.fit.core.precision import policy  # noqa: E402
from gputui.fit.graph.memory import model_phases  # noqa: E402
from gputui.fit.importers.modelsfile import load_keras_model  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_memory import peak_cpu_bytes  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "keras"
MiB = 1 << 20


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], Any]  # -> keras.Model (inside the measurement)
    batch: int
    modes: tuple[str, ...] = ("inference", "train")
    optimizer: str = "adam"
    gan: str | None = None  # a models TOML GAN's name: build() gives (generator, discriminator)


def _app(name: str, size: int, **kw: Any) -> Callable[[], Any]:
    def build() -> Any:
        import keras

        return getattr(keras.applications, name)(
            weights=None, input_shape=(size, size, 3), classes=10, **kw
        )

    return build


def _convnext_tiny(size: int, drop_path_rate: float) -> Callable[[], Any]:
    """ConvNeXtTiny with stochastic depth (keras.applications' builder takes no rate)."""

    def build() -> Any:
        from keras.src.applications.convnext import ConvNeXt

        return ConvNeXt(
            depths=[3, 3, 9, 3],
            projection_dims=[96, 192, 384, 768],
            drop_path_rate=drop_path_rate,
            name="convnext_tiny",
            weights=None,
            input_shape=(size, size, 3),
            classes=10,
        )

    return build


def _layers(table: list[dict[str, Any]]) -> list[Any]:
    import keras

    return [
        getattr(keras.layers, d["type"])(**{k: v for k, v in d.items() if k != "type"})
        for d in table
    ]


def _toml_gan(name: str) -> Callable[[], Any]:
    """A models TOML GAN's generator and discriminator as Keras Sequential models."""

    def build() -> Any:
        import keras
        import tomllib

        raw = tomllib.loads((ROOT / "examples" / "models.toml").read_text())
        table = next(m for m in raw["model"] if m["name"] == name)
        nets = []
        for part in ("generator", "discriminator"):
            t = table[part]
            nets.append(
                keras.Sequential([keras.Input(tuple(t["input_shape"])), *_layers(t["layers"])])
            )
        return tuple(nets)

    return build


def _run_gan(case: Case, built: Any, mode: str, steps: int) -> None:
    """The classic Keras GAN loop: D on real then generated images, G through a frozen D."""
    import keras

    gen, disc = built
    rng = np.random.default_rng(0)
    noise = rng.standard_normal((case.batch, *gen.inputs[0].shape[1:])).astype("float32")
    if mode == "inference":
        for _ in range(steps):
            gen.predict_on_batch(noise)
        return
    real = rng.standard_normal((case.batch, *disc.inputs[0].shape[1:])).astype("float32")
    ones, zeros = np.ones((case.batch, 1), "float32"), np.zeros((case.batch, 1), "float32")
    disc.compile(optimizer=case.optimizer, loss="binary_crossentropy")
    disc.trainable = False
    combined = keras.Sequential([gen, disc])
    combined.compile(optimizer=case.optimizer, loss="binary_crossentropy")
    disc.trainable = True
    for _ in range(steps):
        fake = gen.predict_on_batch(noise)
        disc.train_on_batch(real, ones)
        disc.train_on_batch(fake, zeros)
        disc.trainable = False
        combined.train_on_batch(noise, ones)
        disc.trainable = True


def _fixture(name: str) -> Callable[[], Any]:
    def build() -> Any:
        import keras

        return keras.models.model_from_json((FIXTURES / f"{name}.json").read_text())

    return build


CASES = (
    Case("EfficientNetB1", _app("EfficientNetB1", 64), 4),
    Case("MobileNetV3Large", _app("MobileNetV3Large", 64), 4),
    Case("ResNet50V2", _app("ResNet50V2", 64), 4),
    Case("ConvNeXtTiny", _app("ConvNeXtTiny", 64), 4),
    # SGD keeps the step small, so the activations (and drop path's) decide the peak
    Case("ConvNeXtTiny sgd", _app("ConvNeXtTiny", 64), 16, ("train",), "sgd"),
    Case(
        "ConvNeXtTiny drop_path 0.1 sgd",
        _convnext_tiny(64, 0.1),
        16,
        ("train",),
        "sgd",
    ),
    Case("mnist_convnet", _fixture("mnist_convnet"), 32),
    Case("bidirectional_lstm_imdb", _fixture("bidirectional_lstm_imdb"), 8),
    Case("mnist-gan", _toml_gan("mnist-gan"), 32, gan="mnist-gan"),
)


SEQUENCE = 200  # where a fixture leaves a length variable (None)


def _inputs(model: Any, batch: int) -> list[Any]:
    rng = np.random.default_rng(0)
    out = []
    for t in model.inputs:
        shape = (batch, *[SEQUENCE if d is None else d for d in t.shape[1:]])
        if "int" in str(t.dtype):
            out.append(rng.integers(0, 100, size=shape).astype("int32"))
        else:
            out.append(rng.standard_normal(shape).astype("float32"))
    return out


def _targets(model: Any, batch: int) -> list[Any]:
    return [
        np.zeros((batch, *[SEQUENCE if d is None else d for d in t.shape[1:]]), "float32")
        for t in model.outputs
    ]


def resident_bytes(built: Any, mode: str, gan: bool) -> int:
    """Bytes of the variables the work starts with (a GAN's inference: its generator's)."""
    models = (built[0],) if gan and mode == "inference" else (built if gan else (built,))
    return sum(v.value.numel() * v.value.element_size() for m in models for v in m.variables)


def run(case: Case, built: Any, mode: str, steps: int = 3) -> None:
    if case.gan is not None:
        _run_gan(case, built, mode, steps)
        return
    model = built
    xs = _inputs(model, case.batch)
    x = xs if len(xs) > 1 else xs[0]
    if mode == "inference":
        for _ in range(steps):
            model.predict_on_batch(x)
        return
    ys = _targets(model, case.batch)
    model.compile(optimizer=case.optimizer, loss="mse")
    for _ in range(steps):
        model.train_on_batch(x, ys if len(ys) > 1 else ys[0])


def measure(case: Case, mode: str) -> int:
    """The peak in a fresh process: a model left from an earlier case, freed by the
    collector during this one, would lower the allocator's total below its baseline."""
    done = subprocess.run(
        [sys.executable, __file__, "--measure-one", case.name, mode],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.split()[-1])


def estimate(case: Case, mode: str, runtime: str) -> tuple[int, str]:
    if case.gan is not None:
        from gputui.fit.importers.modelsfile import layer_models, load_models

        gan = next(
            m
            for m in layer_models(load_models(ROOT / "examples" / "models.toml"))
            if m.name == case.gan
        )
        spec = replace(gan, mode=mode, optimizer=case.optimizer, runtime=runtime)  # type: ignore[arg-type]
        phase, parts = peak(model_phases(spec, policy("fp32"), "cpu"), case.batch)
        return int(parts.total), phase.name
    model = case.build()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{case.name}.json"
        path.write_text(model.to_json())
        shapes = {
            t._keras_history[0].name: [SEQUENCE if d is None else d for d in t.shape[1:]]
            for t in model.inputs
            if None in t.shape[1:]
        }
        spec = load_keras_model(path, input_shapes=shapes, runtime=(runtime, "--runtime"))  # type: ignore[arg-type]
    spec = replace(spec, mode=mode, optimizer=case.optimizer)  # type: ignore[arg-type]
    phases = model_phases(spec, policy("fp32"), "cpu")
    phase, parts = peak(phases, case.batch)
    return int(parts.total), phase.name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    ap.add_argument("--mode", action="append", choices=("inference", "train"))
    ap.add_argument("--runtime", default="keras-torch")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument(
        "--measured",
        type=Path,
        metavar="FILE",
        help="a JSON file of measurements: reused where it has the case, written back",
    )
    ap.add_argument("--measure-one", nargs=2, metavar=("CASE", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.measure_one:
        name, mode = args.measure_one
        one = next(c for c in CASES if c.name == name)
        import keras

        # built before the measurement: Keras' initializers make weight-sized
        # temporaries once, which in a small model would be the peak instead of the step
        keras.utils.set_random_seed(0)
        built = one.build()
        work = peak_cpu_bytes(lambda: run(one, built, mode))
        print(work + resident_bytes(built, mode, one.gan is not None))
        return 0
    cache: dict[str, int] = {}
    if args.measured is not None and args.measured.exists():
        cache = json.loads(args.measured.read_text())
    rows = []
    for case in CASES:
        if args.case and case.name not in args.case:
            continue
        for mode in case.modes:
            if args.mode and mode not in args.mode:
                continue
            key = f"{case.name}/{mode}/{case.batch}"
            if key not in cache:
                cache[key] = measure(case, mode)
                if args.measured is not None:
                    args.measured.write_text(json.dumps(cache, indent=1))
            measured = cache[key]
            est, phase = estimate(case, mode, args.runtime)
            base, _ = estimate(case, mode, "pytorch")
            err = (est - measured) / measured * 100
            base_err = (base - measured) / measured * 100
            rows.append((case.name, mode, case.batch, measured, est, err, phase, base_err))
            if not args.markdown:
                print(
                    f"{case.name:<24} {mode:<9} b{case.batch:<3} measured {measured / MiB:9.2f} MiB"
                    f"  estimated {est / MiB:9.2f} MiB  {err:+6.1f} %  (pytorch-style "
                    f"{base_err:+6.1f} %)  ({phase})",
                    flush=True,
                )
    if args.markdown:
        print(
            f"| model | mode | batch | measured MiB | estimated MiB ({args.runtime}) | error "
            "| error as pytorch | estimated peak at |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---|")
        for name, mode, b, m, e, err, phase, base_err in rows:
            print(
                f"| {name} | {mode} | {b} | {m / MiB:.2f} | {e / MiB:.2f} | {err:+.1f} % "
                f"| {base_err:+.1f} % | {phase} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
