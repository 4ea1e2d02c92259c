"""The process details' "compare with a configured model" (`c`): each model of the
dashboard's models file, estimated for the process's GPU (tensors + CUDA context +
allocator reserve), beside the process's memory, on simulated GPUs with scripted memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.sources.simulated.source import SimulatedSource
from gputui.tui.screens.process import ProcessScreen
from tests.usage.runs import TRAINING
from tests.waiting import wait_for

from .scripted_app import make_app, ready_table, screen_lines

MODELS = """
[[model]]
name = "mnist-cnn"
kind = "sequential"
input_shape = [28, 28, 1]
batch_size = 128
optimizer = "adam"
mode = "train"
layers = [
  { type = "Conv2D", filters = 32, kernel_size = [3, 3], activation = "relu" },
  { type = "Flatten" },
  { type = "Dense", units = 10, activation = "softmax" },
]
"""


def expected_estimate(source: SimulatedSource, models: Path) -> int:
    from gputui.catalog import load_catalog
    from gputui.fit import FitRequest, check, load_any, targets_from_snapshot

    (target, _) = targets_from_snapshot(source.snapshot_at(60.0), load_catalog())
    (model,) = load_any(models)
    return int(check(FitRequest(model, (target,), backend="cuda")).checks[0].chosen.breakdown.total)


async def test_compare_with_a_configured_model(tmp_path: Path) -> None:
    scenario = tmp_path / "training.toml"
    scenario.write_text(TRAINING)
    models = tmp_path / "models.toml"
    models.write_text(MODELS)
    source = SimulatedSource.from_scenario(scenario, clock=lambda: 60.0)  # the 10 GiB plateau
    app = make_app(source, interval=30.0, models_path=models)
    async with app.run_test(size=(140, 50)) as pilot:
        await ready_table(pilot, app, rows=2)
        await pilot.press("enter")
        assert isinstance(app.screen, ProcessScreen)
        screen = app.screen
        pid = screen.proc.pid
        assert "c: each model's estimate beside this process's memory" in "\n".join(
            screen_lines(app)
        )
        await pilot.press("c")
        await wait_for(pilot, lambda: "mnist-cnn" in "\n".join(screen_lines(app)))
        text = "\n".join(screen_lines(app))
        row = next(line for line in text.splitlines() if "mnist-cnn" in line)
        estimate = expected_estimate(source, models)
        observed = screen.proc.gpu_memory
        assert observed is not None and pid in (4242, 5151)
        assert f"{observed / estimate:.2f}" in row
        assert "on GeForce RTX 3090; observed: NVML's memory of the process" in text


async def test_compare_says_when_the_models_file_is_bad(tmp_path: Path) -> None:
    scenario = tmp_path / "training.toml"
    scenario.write_text(TRAINING)
    models = tmp_path / "models.toml"
    models.write_text("[[model]]\nname = 3\n")
    source = SimulatedSource.from_scenario(scenario, clock=lambda: 60.0)
    app = make_app(source, interval=30.0, models_path=models)
    async with app.run_test(size=(140, 50)) as pilot:
        await ready_table(pilot, app, rows=2)
        await pilot.press("enter")
        await pilot.press("c")
        await wait_for(pilot, lambda: "models.toml" in "\n".join(screen_lines(app)))
        assert isinstance(app.screen, ProcessScreen)


async def test_compare_shows_what_this_machine_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputui.usage.observed import Comparison, store

    monkeypatch.setenv("GPUTUI_DATA_DIR", str(tmp_path / "data"))
    kept = Comparison("GeForce RTX 3090", "pytorch", "m", 10 << 30, 12 << 30, 1, None, 0.0)
    assert store([kept]) is None
    scenario = tmp_path / "training.toml"
    scenario.write_text(TRAINING)
    models = tmp_path / "models.toml"
    models.write_text(MODELS)
    source = SimulatedSource.from_scenario(scenario, clock=lambda: 60.0)
    app = make_app(source, interval=30.0, models_path=models)
    async with app.run_test(size=(140, 50)) as pilot:
        await ready_table(pilot, app, rows=2)
        await pilot.press("enter")
        await pilot.press("c")
        await wait_for(pilot, lambda: "mnist-cnn" in "\n".join(screen_lines(app)))
        text = "\n".join(screen_lines(app))
        assert "on this machine, jobs like this used 20 % more than predicted" in text
