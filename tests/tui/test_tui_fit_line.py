"""The Fit verdict on the dashboard, one line per GPU, live and cheap."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from gputui.model.snapshot import DeviceSnapshot
from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.fit_line import FitLine, needs_pass, pass_inputs
from tests.waiting import wait_for

from .conftest import GIB, ScriptedSource, make_app, make_device, make_snapshot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "models.toml"

ONE_MODEL = """
[[model]]
name = "wide-mlp"
input_shape = [4096]
batch_size = 64
mode = "train"
optimizer = "adam"
layers = [
  { type = "Dense", units = 16384 },
  { type = "Dense", units = 16384 },
  { type = "Dense", units = 10 },
]
"""


def fit_text(app: GpuTuiApp) -> list[str]:
    line = app.dashboard.query_one(FitLine)
    lines = [s.text for s in app.screen._compositor.render_strips()]
    return [ln.strip() for ln in lines[line.region.y : line.region.bottom]]


def gpu(index: int, used_gib: float) -> DeviceSnapshot:
    """A conftest device whose free memory is what its total and used say."""
    total = 24 * GIB if index % 2 == 0 else 80 * GIB
    return make_device(index, used_gib=used_gib, memory_free=int(total - used_gib * GIB))


async def test_one_line_per_gpu_lost_gpu_with_its_reason() -> None:
    lost = DeviceSnapshot(info=make_device(1).info, failed="GPU is lost (fell off the bus)")
    source = ScriptedSource(make_snapshot(devices=(gpu(0, 2.0), lost)))
    app = make_app(source, models_path=EXAMPLES)
    async with app.run_test(size=(160, 50)) as pilot:
        line = app.dashboard.query_one(FitLine)
        await wait_for(pilot, lambda: line.passes >= 1)
        await pilot.pause(0.1)
        assert "GPU 1 unavailable" in fit_text(app)[0]  # one summary line
        await pilot.press("e")  # every GPU's line
        await pilot.pause(0.1)
        text = fit_text(app)
        assert any(t.startswith("Fit GPU 1: unavailable: GPU is lost") for t in text)
        gpu0 = next(t for t in text if t.startswith("Fit GPU 0:"))
        assert "fits now: mnist-cnn (batch" in gpu0  # a small CNN fits in 22 GiB free
        assert "GPU 1" not in gpu0


async def test_follows_free_memory_but_skips_small_changes(tmp_path: Path) -> None:
    models = tmp_path / "models.toml"
    models.write_text(ONE_MODEL)
    source = ScriptedSource(make_snapshot(devices=(gpu(0, 1.0),)))
    app = make_app(source, models_path=models)
    async with app.run_test(size=(160, 50)) as pilot:
        line = app.dashboard.query_one(FitLine)
        line.min_gap_s = 0.0  # this test is about the threshold, the next one about the gap
        await wait_for(pilot, lambda: line.passes >= 1)
        await pilot.pause(0.1)
        assert "fits now: wide-mlp" in fit_text(app)[0]
        polls = source.polls
        # 100 MiB more used: under the threshold, no new pass however many polls
        source.next_snapshot = make_snapshot(devices=(gpu(0, 1.1),))
        await wait_for(pilot, lambda: source.polls >= polls + 10)
        assert line.passes == 1
        # the GPU fills up: a new pass, and the verdict changes
        source.next_snapshot = make_snapshot(devices=(gpu(0, 23.9),))
        await wait_for(pilot, lambda: line.passes >= 2)
        await pilot.pause(0.1)
        assert "no configured model fits" in fit_text(app)[0]
        assert "not: wide-mlp" in fit_text(app)[0]


async def test_moving_free_memory_waits_for_the_gap_a_lost_gpu_does_not(tmp_path: Path) -> None:
    models = tmp_path / "models.toml"
    models.write_text(ONE_MODEL)
    source = ScriptedSource(make_snapshot(devices=(gpu(0, 1.0),)))
    app = make_app(source, models_path=models)
    async with app.run_test(size=(160, 50)) as pilot:
        line = app.dashboard.query_one(FitLine)
        await wait_for(pilot, lambda: line.passes >= 1)
        source.next_snapshot = make_snapshot(devices=(gpu(0, 23.9),))
        polls = source.polls
        await wait_for(pilot, lambda: source.polls >= polls + 10)
        assert line.passes == 1  # within MIN_GAP_S of the last pass
        lost = DeviceSnapshot(info=gpu(0, 1.0).info, failed="GPU is lost")
        source.next_snapshot = make_snapshot(devices=(lost,))
        await wait_for(pilot, lambda: line.passes >= 2, timeout=5)
        await pilot.pause(0.1)
        assert fit_text(app)[0].startswith("Fit GPU 0: unavailable: GPU is lost")


def test_needs_pass_thresholds() -> None:
    a = pass_inputs(make_snapshot(devices=(gpu(0, 4.0),)))
    same = pass_inputs(make_snapshot(devices=(gpu(0, 4.2),)))
    moved = pass_inputs(make_snapshot(devices=(gpu(0, 5.0),)))
    assert not needs_pass(a, same)  # 200 MiB of 24 GiB
    assert needs_pass(a, moved)
    assert needs_pass(None, a)
    failed = make_snapshot(devices=(replace(gpu(0, 4.0), failed="GPU is lost"),))
    assert needs_pass(a, pass_inputs(failed))
    assert needs_pass(a, pass_inputs(make_snapshot(devices=(gpu(0, 4.0), gpu(1, 4.0)))))


def test_the_line_reads_the_same_verdict_as_the_fit_screen() -> None:
    """One precision instead of all: that precision's verdict and batch are unchanged. The
    line computes no speed, so it checks the card's tensor-core choice; the Fit screen may
    recommend a faster precision from the speed it computes, and says so."""
    from gputui.fit.graph.estimate import ModelCheck
    from gputui.tui.views.fit_pass import estimate_pass
    from gputui.tui.widgets.fit_line import recommended_only

    snap = make_snapshot(devices=(gpu(0, 3.0), gpu(1, 70.0)))
    full = estimate_pass(EXAMPLES, snap, None, rank=False)
    light = estimate_pass(EXAMPLES, snap, full, rank=False, estimate=recommended_only)
    assert len(light.checks) == len(full.checks) > 0
    for a, b in zip(light.checks, full.checks, strict=True):
        same = b.estimate_for(a.recommended) if isinstance(b, ModelCheck) else b.chosen
        assert same is not None and len(a.estimates) == 1
        assert a.recommended == b.recommended or "fastest computed" in b.recommended_reason
        assert a.chosen.verdict_free == same.verdict_free
        assert a.chosen.max_batch_size_free == same.max_batch_size_free


def test_the_line_builds_and_keeps_no_speed_estimates() -> None:
    """The line shows memory only: no roofline profile in its checks nor in the op cache."""
    from gputui.fit.graph import step_ops as graph_speed
    from gputui.fit.graph.estimate import ModelCheck
    from gputui.tui.views.fit_pass import estimate_pass
    from gputui.tui.widgets.fit_line import recommended_only

    snap = make_snapshot(devices=(gpu(0, 3.0), gpu(1, 70.0)))
    graph_speed._OPS_CACHE.clear()
    light = estimate_pass(EXAMPLES, snap, None, rank=False, estimate=recommended_only)
    layered = [c for c in light.checks if isinstance(c, ModelCheck)]
    assert layered and all(c.target.card is not None for c in layered)  # a speed was possible
    assert all(e.speed is None for c in layered for e in c.estimates)
    assert not graph_speed._OPS_CACHE
    full = estimate_pass(EXAMPLES, snap, None, rank=False)  # the Fit screen's pass still has them
    assert any(c.chosen.speed is not None for c in full.checks if isinstance(c, ModelCheck))


def test_free_only_refresh_answers_what_a_full_pass_answers() -> None:
    """Only free memory moved: the kept memory models give the verdicts and batches a new
    full pass gives, for layer models and transformers, on both GPUs, at many free values."""
    from gputui.tui.views.fit_pass import estimate_pass
    from gputui.tui.widgets.fit_line import FreeOnly, fit_lines, recommended_only

    def passes(snap: Any, previous: Any) -> Any:
        return estimate_pass(EXAMPLES, snap, previous, rank=False, estimate=recommended_only)

    first = passes(make_snapshot(devices=(gpu(0, 3.0), gpu(1, 10.0))), None)
    kinds = {type(c).__name__ for c in first.checks}
    assert kinds == {"ModelCheck", "TransformerCheck"}, kinds
    free_only = FreeOnly()
    compared = 0
    for used0, used1 in ((0.0, 0.5), (1.0, 33.3), (11.7, 64.0), (20.0, 79.0), (23.9, 79.9)):
        snap = make_snapshot(devices=(gpu(0, used0), gpu(1, used1)))
        cheap = free_only.refresh(first, snap)
        full = passes(snap, first)
        assert cheap is not None
        assert [t.memory_free for t in cheap.targets] == [t.memory_free for t in full.targets]
        for a, b in zip(cheap.checks, full.checks, strict=True):
            assert (a.model.name, a.target.index) == (b.model.name, b.target.index)
            assert a.chosen.free_bytes == b.chosen.free_bytes
            assert a.chosen.verdict_free == b.chosen.verdict_free, (a.model.name, used0, used1)
            assert a.chosen.max_batch_size_free == b.chosen.max_batch_size_free, a.model.name
            compared += 1
        assert [ln.plain for ln in fit_lines(cheap)] == [ln.plain for ln in fit_lines(full)]
    assert compared == 5 * len(first.checks)


def test_free_only_refresh_declines_a_gpu_without_free_memory() -> None:
    from gputui.tui.views.fit_pass import estimate_pass
    from gputui.tui.widgets.fit_line import FreeOnly, recommended_only

    snap = make_snapshot(devices=(gpu(0, 3.0), gpu(1, 10.0)))
    first = estimate_pass(EXAMPLES, snap, None, rank=False, estimate=recommended_only)
    unknown = make_snapshot(devices=(gpu(0, 3.0), make_device(1, memory_free=None)))
    assert FreeOnly().refresh(first, unknown) is None
