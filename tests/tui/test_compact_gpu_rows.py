"""Eight GPUs leave room for processes (one line per GPU), and the fit
verdicts take one line until expanded."""

from __future__ import annotations

from typing import Any

import pytest
from demo_driving import EXAMPLES, app_for, ready, screen_lines, visible_table_rows

from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.gpu_panel import GpuPanel


async def test_eight_gpus_and_processes_fit_80x24() -> None:
    app = app_for("demo-8gpu.toml", models_path=EXAMPLES)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        panels = list(app.dashboard.query(GpuPanel))
        assert len(panels) == 8
        lines = screen_lines(app)
        for panel in panels:
            assert panel.region.height == 1  # one line per GPU
            assert panel.region.bottom <= 24
            row = lines[panel.region.y]
            assert row.startswith(f"{panel.index} H100")
            assert "°C" in row and "/700W" in row and "G " in row and "%" in row
            assert not row.endswith("…")
        assert visible_table_rows(app) >= 4
        assert app.dashboard.query_one(FitLine).region.height == 1


async def test_at_least_as_many_process_rows_as_nvitop_120x40() -> None:
    app = app_for("demo-8gpu.toml", models_path=EXAMPLES)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        assert visible_table_rows(app) >= 11


async def test_fit_line_is_one_line_and_e_expands_it() -> None:
    app = app_for("demo-8gpu.toml", models_path=EXAMPLES)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        line = app.dashboard.query_one(FitLine)
        assert line.region.height == 1
        summary = screen_lines(app)[line.region.y]
        assert "Fit, 8 GPUs" in summary and "fits now" in summary
        await pilot.press("e")
        await pilot.pause(0.1)
        assert line.region.height == 8
        shown = screen_lines(app)[line.region.y : line.region.bottom]
        assert [s.split(":")[0].strip() for s in shown] == [f"Fit GPU {i}" for i in range(8)]
        await pilot.click(FitLine)
        await pilot.pause(0.1)
        assert line.region.height == 1


async def test_unavailable_gpus_listed_in_index_order() -> None:
    app = app_for("faults.toml", models_path=EXAMPLES)
    async with app.run_test(size=(120, 50)) as pilot:
        await ready(pilot)
        await pilot.press("e")
        await pilot.pause(0.1)
        line = app.dashboard.query_one(FitLine)
        gpus = [
            int(text.split(":")[0].split()[-1])
            for text in (t.plain for t in line.per_gpu)
            if text.startswith("Fit GPU")
        ]
        assert len(gpus) >= 2
        assert gpus == sorted(gpus)
        assert any("unavailable" in t.plain for t in line.per_gpu)


async def test_no_models_configured_is_said_not_judged(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./gputui.toml
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user models file
    app = app_for("demo-8gpu.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        line = app.dashboard.query_one(FitLine)
        text = screen_lines(app)[line.region.y]
        assert "no models configured: f to choose a file" in text
        assert "mnist" not in text
        assert line.region.height == 1


def test_one_gpu_summary_is_its_own_line_and_says_a_stopped_pass() -> None:
    from rich.text import Text

    from gputui.fit.core.target import Target
    from gputui.tui.views.fit_pass import FitPass
    from gputui.tui.widgets.fit_summary import summary_line

    target = Target("GPU", 24 * 1024**3, memory_free=20 * 1024**3, index=0)
    result = FitPass(origin="given", targets=(target,), stopped="time budget spent")
    line = summary_line(result, [Text("Fit GPU 0: fits now: a"), Text("Fit: time budget spent")])
    assert line.plain == "Fit GPU 0: fits now: a; time budget spent"
    assert "GPUs" not in line.plain
