"""Text the Fit and Catalog screens cut at common sizes: "Max batch now" off-screen at 80x24
with a MIG instance's long label, "400.0" without its unit in the memory breakdown, the
memory bar's header and the Catalog's Price column at 120 columns."""

from __future__ import annotations

from typing import Any

from demo_driving import EXAMPLES, app_for, ready, screen_lines

from gputui.tui.screens.catalog import CatalogScreen
from gputui.tui.screens.fit import FitScreen
from tests.waiting import wait_for


async def _fit_lines(scenario: str | None, size: tuple[int, int]) -> list[str]:
    app = app_for(scenario, models_path=EXAMPLES)
    async with app.run_test(size=size) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("f")

        def done() -> bool:
            s: Any = app.screen
            return isinstance(s, FitScreen) and bool(s.checks) and not s.busy

        await wait_for(pilot, done)
        await pilot.pause(0.3)
        return screen_lines(app)


async def test_fit_at_80x24_with_mig_keeps_max_batch_and_units() -> None:
    lines = await _fit_lines("mig.toml", (80, 24))
    header = next(ln for ln in lines if ln.lstrip().startswith("Model "))
    assert "Max batch now" in header, header
    row = lines[lines.index(header) + 1]
    assert "0: MIG 3g.40g…" in row, row  # a cut label says it is cut
    shown = "\n".join(lines)
    assert "400.0 MiB" in shown, shown  # the CUDA context, with its unit


async def test_fit_at_120_cuts_no_header() -> None:
    for scenario in (None, "mig.toml"):
        lines = await _fit_lines(scenario, (120, 40))
        header = next(ln for ln in lines if ln.lstrip().startswith("Model ")).rstrip()
        assert "Memory (others" not in header and "Others|" not in header, header
        assert header.endswith("Precision"), header


async def test_catalog_price_column_whole_at_120() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CatalogScreen))
        await pilot.pause(0.5)
        header = next(ln for ln in screen_lines(app) if ln.lstrip().startswith("Card"))
        assert "Price $" in header and header.rstrip().endswith("BF16 TF/W"), header
