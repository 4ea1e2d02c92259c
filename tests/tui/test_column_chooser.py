"""The column chooser: the command palette hides and shows each process-table column (GPU,
PID and Command always stay), and the choice is what settings.toml keeps at exit."""

from __future__ import annotations

from pathlib import Path

from demo_driving import app_for, ready

from gputui.tui.settings import Settings, load, save
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for


async def _palette(pilot: object, text: str) -> None:
    await pilot.press("ctrl+p")  # type: ignore[attr-defined]
    await pilot.pause(0.2)  # type: ignore[attr-defined]
    await pilot.press(*text)  # type: ignore[attr-defined]
    await pilot.pause(0.5)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]


async def test_hide_and_show_a_column_from_the_palette_and_keep_it(tmp_path: Path) -> None:
    app = app_for(None, settings=Settings(hidden_columns=("gmbw",)))
    async with app.run_test(size=(200, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        assert "time" in [c.key for c in table.shown]
        await _palette(pilot, "Hide column Time")
        await wait_for(pilot, lambda: "time" not in [c.key for c in table.shown])
        titles = [c.title for c in app.get_system_commands(app.dashboard)]
        assert "Show column Time" in titles and "Show column GMBW%" in titles
        assert not any(t.endswith(("column GPU", "column PID")) for t in titles)
        assert not any("column Command" in t for t in titles)
        await _palette(pilot, "Show column GMBW%")
        await wait_for(pilot, lambda: "gmbw" in [c.key for c in table.shown])
        await pilot.press("q")
    kept = app.exit_settings
    assert kept is not None and kept.hidden_columns == ("time",)
    path = tmp_path / "settings.toml"
    assert save(path, kept) is None
    assert load(path)[0].hidden_columns == ("time",)
