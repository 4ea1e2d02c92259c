"""The Catalog screen driven through Textual's Pilot in a tiny host app."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from textual.app import App
from textual.widgets import DataTable, Input, Static

from gputui.catalog import Catalog
from gputui.telemetry.snapshot import DeviceInfo
from gputui.tui.catalog_screen import INSTALLED_MARK, CatalogScreen

A100_80 = DeviceInfo(
    index=0,
    name="NVIDIA A100-SXM4-80GB",
    memory_total=81920 * 1024 * 1024,
    compute_capability="8.0",
)
UNKNOWN_AMPERE = DeviceInfo(
    index=1,
    name="NVIDIA GeForce RTX 3050",
    memory_total=8192 * 1024 * 1024,
    compute_capability="8.6",
)


class Host(App[None]):
    def __init__(self, installed: Sequence[DeviceInfo]) -> None:
        super().__init__()
        self.installed = installed

    def on_mount(self) -> None:
        self.push_screen(CatalogScreen(self.installed))


def _plain(renderable: object, width: int = 200) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def _rows(screen: CatalogScreen) -> list[str]:
    table = screen.query_one("#catalog-table", DataTable)
    return [str(key.value) for key in table.rows]


async def test_lists_every_card_and_marks_the_installed_one(catalog: Catalog) -> None:
    app = Host([A100_80, UNKNOWN_AMPERE])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CatalogScreen)
        assert _rows(screen) == [c.name for c in catalog.cards]
        table = screen.query_one("#catalog-table", DataTable)
        marked = [
            str(key.value) for key in table.rows if str(table.get_row(key)[0]) == INSTALLED_MARK
        ]
        assert marked == ["A100 SXM4 80 GB"]
        header = _plain(screen.query_one("#catalog-installed", Static).render())
        assert "A100 SXM4 80 GB" in header
        assert "card not in catalog (Ampere)" in header


async def test_slash_filters_the_table(catalog: Catalog) -> None:
    app = Host([A100_80])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CatalogScreen)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"hopper")
        await pilot.pause()
        expected = [c.name for c in catalog.cards if c.architecture == "hopper"]
        assert _rows(screen) == expected
        await pilot.press("escape")  # first escape clears the filter
        await pilot.pause()
        assert len(_rows(screen)) == len(catalog.cards)
        assert app.screen is screen


async def test_enter_compares_with_the_installed_card() -> None:
    app = Host([A100_80])
    async with app.run_test(size=(180, 50)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CatalogScreen)
        await pilot.press("slash", *"H100 SXM", "enter")
        await pilot.pause()
        assert _rows(screen) == ["H100 SXM5 80GB"]
        detail = screen.query_one("#catalog-detail", Static)
        assert not detail.display  # the table has the full width until a card is picked
        await pilot.press("enter")
        await pilot.pause()
        assert screen.selected is not None and screen.selected.name == "H100 SXM5 80GB"
        assert detail.display
        assert "x3.17" in _plain(detail.content)
        text = _plain(screen.comparison(screen.selected))
        assert "A100 SXM4 80 GB" in text and "(installed)" in text
        # BF16: 989.4 / 312 = 3.17; bandwidth 3350 / 2039 = 1.64
        assert "x3.17" in text
        assert "x1.00" in text  # both 80 GB


async def test_escape_goes_back() -> None:
    app = Host([])
    async with app.run_test() as pilot:
        await pilot.pause()
        assert isinstance(app.screen, CatalogScreen)
        header = _plain(app.screen.query_one("#catalog-installed", Static).render())
        assert "No GPU detected" in header
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CatalogScreen)
