"""Issue 21 item 8: Terraform's TF_ variables, the history header's numbering, an
inference model without an optimizer, and the not-visible reason at 120 columns."""

from __future__ import annotations

from third_pass import EXAMPLES, app_for, ready, screen_lines

from gputui.sources.host.source import gpu_environment
from gputui.tui.screens.fit import FitScreen
from gputui.tui.screens.history import HistoryScreen
from gputui.tui.widgets.field import Field
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for


def test_terraform_variables_are_not_gpu_variables() -> None:
    env = gpu_environment(
        {
            "TF_CLI_CONFIG_FILE": "/root/.terraformrc",
            "TF_LOG": "DEBUG",
            "TF_DATA_DIR": "/tmp/tf",
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "TF_FORCE_GPU_ALLOW_GROWTH": "true",
            "TF_XLA_FLAGS": "--tf_xla_auto_jit=2",
            "TF_CONFIG": '{"cluster": {}}',
            "TF_GPU_ALLOCATOR": "cuda_malloc_async",
        }
    )
    assert set(env) == {
        "TF_CPP_MIN_LOG_LEVEL",
        "TF_FORCE_GPU_ALLOW_GROWTH",
        "TF_XLA_FLAGS",
        "TF_CONFIG",
        "TF_GPU_ALLOCATOR",
    }


async def test_history_header_numbers_gpus_by_their_index() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        for _ in range(2):  # this GPU, then the other one
            title = screen.title_text().plain
            index = int(title.split(":")[0].split()[-1])
            assert " of 2" not in title
            assert ("GPUs [0] 1" if index == 0 else "GPUs 0 [1]") in title
            await pilot.press("right")
            await pilot.pause(0.1)
            assert int(screen.title_text().plain.split(":")[0].split()[-1]) != index


async def test_inference_model_names_no_optimizer() -> None:
    app = app_for(None, models_path=EXAMPLES)
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FitScreen))
        screen = app.screen
        assert isinstance(screen, FitScreen)
        await wait_for(pilot, lambda: bool(screen.rows), timeout=60)
        inference = [
            r
            for r in screen.rows
            if getattr(r, "mode", None) == "inference" and hasattr(r, "chosen")
        ]
        assert inference
        head = screen.detail(inference[0]).renderables[0].plain  # type: ignore[attr-defined]
        assert ", inference, batch" in head and "adam" not in head.split("batch")[0]
        train = next(r for r in screen.rows if getattr(r, "mode", None) == "train")
        if hasattr(train, "chosen"):
            assert f", train, {train.model.optimizer}," in screen.detail(train).renderables[0].plain


async def test_not_visible_reason_is_not_cut_at_120() -> None:
    app = app_for("faults.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        hidden = next(k for k in table.visible_keys() if not table.processes[k].host_visible)
        table.move_cursor(row=table.visible_keys().index(hidden))
        await pilot.pause(0.1)
        details = app.dashboard.query_one("#details", Field)
        line = screen_lines(app)[details.region.y]
        assert "(host details: " in line
        start = line.index("(host details: ")
        assert ")" in line[start:] and "…" not in line[: line.index(")", start) + 1]
