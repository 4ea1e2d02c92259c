"""The Catalog screen driven through Textual's Pilot in a tiny host app."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from rich.console import Console
from textual.app import App
from textual.geometry import Region
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


# ------------------------------------------------------------------ no number is cut

RTX_4070_TI_SUPER = DeviceInfo(
    index=0,
    name="NVIDIA GeForce RTX 4070 Ti SUPER",
    memory_total=16376 * 1024 * 1024,
    compute_capability="8.9",
)
RTX_PRO_6000 = DeviceInfo(
    index=0,
    name="NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    memory_total=97887 * 1024 * 1024,
    compute_capability="12.0",
)


def _whole(value: str, text: str) -> bool:
    import re

    return re.search(rf"(?<![\d.,]){re.escape(value)}(?![\d.,])", text) is not None


@pytest.mark.parametrize(
    ("installed", "query", "picked", "size"),
    [
        (RTX_4070_TI_SUPER, "3090 Ti", "GeForce RTX 3090 Ti", (80, 24)),
        (RTX_4070_TI_SUPER, "4090", "GeForce RTX 4090", (80, 24)),
        (RTX_PRO_6000, "GB200", "GB200 (per GPU)", (80, 24)),
        (A100_80, "B200", "B200", (100, 30)),
        (RTX_PRO_6000, "H200 NVL", "H200 NVL", (120, 40)),
        (RTX_4070_TI_SUPER, "3090 Ti", "GeForce RTX 3090 Ti", (50, 24)),  # panel > screen
    ],
)
async def test_comparison_never_cuts_a_number(
    installed: DeviceInfo, query: str, picked: str, size: tuple[int, int]
) -> None:
    """Issue 11 item 7: bandwidth 1008 was shown as `10`. Every figure appears whole."""
    from gputui.catalog.present import compare, fmt

    app = Host([installed])
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CatalogScreen)
        await pilot.press("slash", *query, "enter")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert screen.selected is not None and screen.selected.name == picked
        detail = screen.query_one("#catalog-detail", Static)
        # What is on screen, scrolled through: the panel's lines as Textual draws them.
        shown = []
        for y in range(0, detail.virtual_size.height, max(1, detail.size.height)):
            detail.scroll_to(y=y, animate=False, immediate=True)
            await pilot.pause()
            region = Region(0, 0, detail.outer_size.width, detail.outer_size.height)
            shown += [strip.text for strip in detail.render_lines(region)]
        text = "\n".join(shown)
        assert "…" not in text
        assert detail.region.right <= size[0]  # never runs off the screen
        cards = [*screen.installed_cards[:1], screen.selected]
        ratios_shown = "ratio" in text
        for row in compare(cards):
            for value in row.values:
                if value is not None:
                    assert _whole(fmt(value), text), (row.field, fmt(value), text)
            q = row.ratios[-1]
            if ratios_shown and q is not None:
                assert f"x{q:.2f}" in text, (row.field, text)


async def test_derived_figures_are_marked_on_the_screen() -> None:
    app = Host([RTX_4070_TI_SUPER])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CatalogScreen)
        table = screen.query_one("#catalog-table", DataTable)
        row = table.get_row("GeForce RTX 4070 Ti SUPER")
        assert "88.2*" in [str(cell) for cell in row]
        a100 = table.get_row("A100 SXM4 80 GB")
        assert not any(str(cell).endswith("*") for cell in a100)
        await pilot.press("slash", *"3090 Ti", "enter")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        text = _plain(screen.query_one("#catalog-detail", Static).content, width=90)
        assert "80*" in text and "derived by an architecture rule" in text
