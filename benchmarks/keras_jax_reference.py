"""XLA's own memory figures for Keras 3 on JAX (CPU), beside gputui's PyTorch-style estimate.

gputui does not model `keras-jax` (its answers say the estimate is PyTorch-style); this
prints how far that is from what XLA plans for the same model, as a reference: the
compiled function's `memory_analysis()` (arguments + outputs + temporaries - aliased)
for a jitted inference (`stateless_call`, training=False) and a jitted training step
(the loss's gradients by `jax.value_and_grad`, then Adam's `stateless_apply`).

Needs jax and keras:  .venv/bin/pip install jax==0.10.2 jaxlib==0.10.2 keras
Run:  .venv/bin/python benchmarks/keras_jax_reference.py [--case NAME]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import jax  # noqa: E402
import numpy as np  # noqa: E402

from gputui.fit.core.breakdown import peak_phase as peak  # noqa: E402
from gputui.fit.core.precision import policy  # noqa: E402
from gputui.fit.graph.memory import model_phases  # noqa: E402
from gputui.fit.importers.modelsfile import load_keras_model  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from keras_runtime import CASES, SEQUENCE  # noqa: E402

os.environ["KERAS_BACKEND"] = "jax"  # after keras_runtime, which names torch; before keras

MiB = 1 << 20


def _bytes(compiled: Any) -> int:
    m = compiled.memory_analysis()
    return int(
        m.argument_size_in_bytes
        + m.output_size_in_bytes
        + m.temp_size_in_bytes
        - m.alias_size_in_bytes
    )


def xla_bytes(model: Any, batch: int, mode: str) -> int:
    import keras

    rng = np.random.default_rng(0)
    xs = [
        rng.standard_normal((batch, *[SEQUENCE if d is None else d for d in t.shape[1:]])).astype(
            "float32"
        )
        for t in model.inputs
    ]
    x = xs if len(xs) > 1 else xs[0]
    tv = [v.value for v in model.trainable_variables]
    ntv = [v.value for v in model.non_trainable_variables]
    if mode == "inference":

        def infer(tv: Any, ntv: Any, x: Any) -> Any:
            return model.stateless_call(tv, ntv, x, training=False)[0]

        return _bytes(jax.jit(infer).lower(tv, ntv, x).compile())
    opt = keras.optimizers.Adam()
    opt.build(model.trainable_variables)
    ov = [v.value for v in opt.variables]
    y = np.zeros((batch, *model.outputs[0].shape[1:]), "float32")

    def loss(tv: Any, ntv: Any, x: Any, y: Any) -> Any:
        out, ntv = model.stateless_call(tv, ntv, x, training=True)
        return jax.numpy.mean((out - y) ** 2), ntv

    def step(tv: Any, ntv: Any, ov: Any, x: Any, y: Any) -> Any:
        (_, ntv), grads = jax.value_and_grad(loss, has_aux=True)(tv, ntv, x, y)
        tv, ov = opt.stateless_apply(ov, grads, tv)
        return tv, ntv, ov

    return _bytes(jax.jit(step, donate_argnums=(0, 1, 2)).lower(tv, ntv, ov, x, y).compile())


def estimate(model: Any, batch: int, mode: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.json"
        path.write_text(model.to_json())
        shapes = {
            t._keras_history[0].name: [SEQUENCE if d is None else d for d in t.shape[1:]]
            for t in model.inputs
            if None in t.shape[1:]
        }
        spec = load_keras_model(path, input_shapes=shapes, runtime=("pytorch", "reference"))
    spec = replace(spec, mode=mode, optimizer="adam")  # type: ignore[arg-type]
    return int(peak(model_phases(spec, policy("fp32"), "cpu"), batch)[1].total)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--case", action="append")
    args = ap.parse_args(argv)
    for case in CASES:
        if args.case and case.name not in args.case:
            continue
        model = case.build()
        for mode in case.modes:
            xla = xla_bytes(model, case.batch, mode)
            est = estimate(model, case.batch, mode)
            print(
                f"{case.name:<24} {mode:<9} b{case.batch:<3} XLA {xla / MiB:9.2f} MiB  "
                f"PyTorch-style estimate {est / MiB:9.2f} MiB  {(est - xla) / xla * 100:+6.1f} %",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
