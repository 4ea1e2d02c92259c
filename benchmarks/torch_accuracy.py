"""`gputui fit --torch --device cpu` against a real CPU run of the same module.

For each model of examples/torch: the estimate (the engine's check on the traced
module, tensor memory, backend cpu) beside
  * the real peak, measured as benchmarks/torch_memory.py does (the profiler's
    allocation events): training, the peak of the second step (zero_grad, forward,
    loss, backward, Adam step), when the optimizer state exists; inference, a no_grad
    forward; what was alive before (parameters, buffers, state, the batch) is added to
    the profiler's rise. The step's zero_grad runs just before the profiler starts:
    the profiler does not count the free of a block allocated before it, so the old
    gradients freed inside would be counted as still alive;
  * MemTracker's peak for the same real step (torch.distributed._tools.mem_tracker),
    or the error it raises.
Then the time to trace ResNet-50's training step at two batch sizes.

    .venv/bin/python benchmarks/torch_accuracy.py [--only NAME ...] [--markdown]

Real runs allocate real memory and take a while on a small CPU; keep batches modest.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "src"))

from torch_memory import peak_cpu_bytes  # noqa: E402

from gputui.catalog import load_catalog  # noqa: E402
from gputui.fit import FitRequest, TorchSpec, card_target, check, parse_input_shape  # noqa: E402
from gputui.fit.torch.load import resolve  # noqa: E402

EX = ROOT / "examples" / "torch"


@dataclass(frozen=True)
class Case:
    name: str
    factory: str
    batch: int
    mode: str = "train"
    shape: str | None = None  # --input-shape
    inputs: str | None = None
    loss: str | None = None


CASES = [
    Case("ResNet-50 train", "resnet.py:build", 4, shape="3,224,224", loss="resnet.py:loss"),
    Case("ResNet-50 inference", "resnet.py:build", 8, "inference", shape="3,224,224"),
    Case(
        "ResNet-50 half-frozen train",
        "resnet.py:build_half_frozen",
        4,
        shape="3,224,224",
        loss="resnet.py:loss",
    ),  # fmt: skip
    Case("ViT-B/16 train", "vit.py:build", 2, shape="3,224,224"),
    Case("ViT-B/16 inference", "vit.py:build", 4, "inference", shape="3,224,224"),
    Case("ViT small train", "vit.py:build_small", 8, shape="3,64,64"),
    Case("UNet train", "unet.py:build", 2, shape="3,128,128"),
    Case("UNet inference", "unet.py:build", 4, "inference", shape="3,128,128"),
    Case(
        "LSTM LM train", "lstm_lm.py:build", 8, inputs="lstm_lm.py:inputs", loss="lstm_lm.py:loss"
    ),
    Case("LSTM LM inference", "lstm_lm.py:build", 8, "inference", inputs="lstm_lm.py:inputs"),
    Case("GPT-2 small train", "gpt2.py:build", 2, inputs="gpt2.py:inputs"),
    Case("DCGAN generator step", "gan.py:build", 32, inputs="gan.py:inputs", loss="gan.py:loss"),
    Case("MLP train", "small.py:mlp", 128, shape="1,28,28"),
    Case("1-D audio CNN train", "small.py:audio_cnn", 16, shape="1,16000"),
    Case("Text encoder train", "small.py:text_encoder", 4, inputs="small.py:text_inputs"),
    Case("VAE train", "small.py:vae", 128, shape="1,28,28"),
]


def _ref(text: str | None) -> str | None:
    return f"{EX / text}" if text else None


def spec_of(c: Case) -> TorchSpec:
    return TorchSpec(
        c.name, str(_ref(c.factory)),
        (parse_input_shape(c.shape),) if c.shape else (),
        _ref(c.inputs), _ref(c.loss), c.mode, "adam", c.batch, "fp32",  # type: ignore[arg-type]
    )  # fmt: skip


def estimate(c: Case) -> tuple[int, str]:
    cat = load_catalog()
    card = next(k for k in cat.cards if k.name.endswith("RTX 4090"))
    target = card_target(card, dict(cat.architectures))
    found = check(FitRequest(spec_of(c), (target,), backend="cpu", precision="fp32")).checks[0]
    return found.chosen.breakdown.tensor_bytes, found.chosen.peak_phase


def _loss(c: Case, out: Any) -> Any:
    if c.loss:
        return resolve(str(_ref(c.loss)), "--loss")[0](out, c.batch)
    if getattr(out, "loss", None) is not None:
        return out.loss
    return out.float().sum()


def _batch(c: Case) -> Any:
    if c.inputs:
        return resolve(str(_ref(c.inputs)), "--inputs")[0](c.batch)
    s = parse_input_shape(str(c.shape))
    return torch.randn(c.batch, *s.shape)


def _alive(tensors: list[Any]) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        if isinstance(t, torch.Tensor):
            st = t.untyped_storage()
            seen[st._cdata] = st.nbytes()
    return sum(seen.values())


def real(c: Case) -> tuple[int, str]:
    """The real peak, and MemTracker's reading of the same step (or its error)."""
    torch.manual_seed(0)
    model = resolve(str(_ref(c.factory)), "--torch")[0]()
    x = _batch(c)
    args, kwargs = ((), x) if isinstance(x, dict) else ((x,), {})
    if c.mode == "inference":
        model.eval()

        def work() -> None:
            with torch.no_grad():
                model(*args, **kwargs)

        before = [*model.parameters(), *model.buffers(), *args, *kwargs.values()]
        opt = None
    else:
        model.train()
        opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad])

        def work() -> None:
            loss = _loss(c, model(*args, **kwargs))
            loss.backward()
            opt.step()

        work()  # the first step: the optimizer's state exists from here on
        # the second step's zero_grad, before the profiler starts: it does not see a block
        # allocated before it freed, so freeing the old gradients inside would not count
        opt.zero_grad(set_to_none=True)
        before = [*model.parameters(), *model.buffers(), *args, *kwargs.values(),
                  *(v for s in opt.state.values() for v in s.values())]  # fmt: skip
    alive = _alive(before)
    del before  # holding the first step's gradients would keep them past zero_grad
    peak = alive + peak_cpu_bytes(work)
    return peak, _memtracker(model, opt, work)


def _memtracker(model: Any, opt: Any, work: Any) -> str:
    try:
        from torch.distributed._tools.mem_tracker import MemTracker

        mt = MemTracker()
        mt.track_external(model, *([opt] if opt is not None else []))
        with mt:
            work()
        snap = mt.get_tracker_snapshot("peak")
        return str(sum(v.get("Total", 0) for v in snap.values()))
    except Exception as e:  # the tool's own refusal is a finding, reported as such
        return f"error: {type(e).__name__}: {' '.join(str(e).split())[:90]}"


def trace_time() -> tuple[float, float]:
    """Seconds to trace ResNet-50's training step at two batch sizes (one precision):
    wall time, and this process's CPU time (what a loaded machine does not inflate)."""
    from gputui.fit import traced_model
    from gputui.fit.core.precision import policy

    spec = spec_of(CASES[0])
    traced_model(spec, "cpu").phases(policy("fp32"), "cpu")  # torch's own first-use costs
    started, cpu = time.perf_counter(), time.process_time()
    traced_model(spec, "cuda").phases(policy("fp32"), "cuda")
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append")
    ap.add_argument("--no-timing", action="store_true")
    args = ap.parse_args()
    print(
        "| model | batch | estimate MiB | real MiB | est/real | MemTracker MiB | MT/real | peak moment |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for c in CASES:
        if args.only and not any(o.lower() in c.name.lower() for o in args.only):
            continue
        try:
            est, moment = estimate(c)
        except Exception as e:  # a model that cannot be traced: said, the others go on
            print(f"| {c.name} | {c.batch} | error: {type(e).__name__}: {str(e)[:80]} | | | | | |")
            continue
        got, mt = real(c)
        mib = 2**20
        mt_cell = f"{int(mt) / mib:.1f} | {int(mt) / got:.3f}" if mt.isdigit() else f"{mt} | -"
        print(f"| {c.name} | {c.batch} | {est / mib:.1f} | {got / mib:.1f} | {est / got:.3f} | "
              f"{mt_cell} | {moment} |", flush=True)  # fmt: skip
    if not args.no_timing:
        wall, cpu = trace_time()
        print(f"\ntracing ResNet-50 training at two batch sizes: {wall:.2f} s ({cpu:.2f} s CPU)")


if __name__ == "__main__":
    main()
