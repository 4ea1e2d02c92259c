"""The Catalog screen driven through Textual's Pilot in a tiny host app."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from rich.console import Console
from textual.app import App
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static
from textual.widgets._footer import FooterKey

from gputui.catalog import Catalog
from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot, Snapshot
from gputui.tui.screens.catalog import CatalogScreen
from gputui.tui.views.catalog_compare import INSTALLED_MARK
from tests.waiting import wait_for

MIB = 1024 * 1024


def gpu(index: int, name: str, mib: int, cc: str) -> DeviceInfo:
    return DeviceInfo(index=index, name=name, memory_total=mib * MIB, compute_capability=cc)


A100_80 = gpu(0, "NVIDIA A100-SXM4-80GB", 81920, "8.0")
UNKNOWN_AMPERE = gpu(1, "NVIDIA GeForce RTX 3050", 8192, "8.6")
RTX_4070_TI_SUPER = gpu(0, "NVIDIA GeForce RTX 4070 Ti SUPER", 16376, "8.9")
RTX_PRO_6000 = gpu(0, "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 97887, "12.0")


class Host(App[None]):
    def __init__(
        self, installed: Sequence[DeviceInfo | DeviceSnapshot], gpu: int | None = None
    ) -> None:
        super().__init__()
        self.installed = installed
        self.gpu = gpu

    def on_mount(self) -> None:
        self.push_screen(CatalogScreen(self.installed, gpu=self.gpu))


@asynccontextmanager
async def catalog_screen(
    installed: Sequence[DeviceInfo | DeviceSnapshot],
    size: tuple[int, int] = (160, 50),
    gpu: int | None = None,
) -> AsyncIterator[tuple[Pilot[Any], CatalogScreen]]:
    """The screen opened over `installed`, mounted and drawn once."""
    app = Host(installed, gpu)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CatalogScreen)
        yield pilot, screen


async def pick(pilot: Pilot[Any], query: str) -> None:
    """What a user types to compare a card: `/`, the filter, enter, enter on the row."""
    await pilot.press("slash", *query, "enter")
    await pilot.pause()
    await pilot.press("enter")
    await pilot.pause()


def _plain(renderable: object, width: int = 200) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def _rows(screen: CatalogScreen) -> list[str]:
    table = screen.query_one("#catalog-table", DataTable)
    return [str(key.value) for key in table.rows]


def _header(screen: CatalogScreen) -> str:
    return _plain(screen.query_one("#catalog-installed", Static).render())


def _detail(screen: CatalogScreen) -> str:
    return _plain(screen.query_one("#catalog-detail", Static).content)


async def test_lists_every_card_and_marks_the_installed_one(catalog: Catalog) -> None:
    async with catalog_screen([A100_80, UNKNOWN_AMPERE]) as (_, screen):
        assert _rows(screen) == [c.name for c in catalog.cards]
        table = screen.query_one("#catalog-table", DataTable)
        marked = [
            str(key.value) for key in table.rows if str(table.get_row(key)[0]) == INSTALLED_MARK
        ]
        assert marked == ["A100 SXM4 80 GB"]
        header = _header(screen)
        assert "A100 SXM4 80 GB" in header
        assert "card not in catalog (Ampere)" in header


async def test_slash_filters_the_table(catalog: Catalog) -> None:
    async with catalog_screen([A100_80]) as (pilot, screen):
        await pilot.press("slash")
        assert isinstance(screen.app.focused, Input)
        await pilot.press(*"hopper")
        await pilot.pause()
        expected = [c.name for c in catalog.cards if c.architecture == "hopper"]
        assert _rows(screen) == expected
        await pilot.press("escape")  # first escape clears the filter
        await pilot.pause()
        assert len(_rows(screen)) == len(catalog.cards)
        assert screen.app.screen is screen


async def test_enter_compares_with_the_installed_card() -> None:
    async with catalog_screen([A100_80], size=(180, 50)) as (pilot, screen):
        await pilot.press("slash", *"H100 SXM", "enter")
        await pilot.pause()
        assert _rows(screen) == ["H100 SXM5 80GB"]
        detail = screen.query_one("#catalog-detail", Static)
        assert not detail.display  # the table has the full width until a card is picked
        await pilot.press("enter")
        await pilot.pause()
        assert screen.selected is not None and screen.selected.name == "H100 SXM5 80GB"
        assert detail.display
        assert "x3.17" in _detail(screen)
        text = _plain(screen.comparison(screen.selected))
        assert "A100 SXM4 80 GB" in text and "(GPU 0)" in text
        # BF16: 989.4 / 312 = 3.17; bandwidth 3350 / 2039 = 1.64
        assert "x3.17" in text
        assert "x1.00" in text  # both 80 GB


async def test_escape_goes_back() -> None:
    async with catalog_screen([], size=(80, 24)) as (pilot, screen):
        assert "No GPU detected" in _header(screen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(screen.app.screen, CatalogScreen)


# ------------------------------------------------------------------ several GPUs, lost GPUs
# The comparison once used the first installed GPU whatever the user chose.

L4 = gpu(2, "NVIDIA L4", 23034, "8.9")
A100_40 = gpu(1, "NVIDIA A100-PCIE-40GB", 40960, "8.0")
GTX_1080_TI = gpu(0, "NVIDIA GeForce GTX 1080 Ti", 11264, "6.1")


def device(info: DeviceInfo, failed: str | None = None) -> DeviceSnapshot:
    """A polled GPU: readable, or `failed` (NVML's reason) with no sample, as a lost GPU."""
    if failed is not None:
        return DeviceSnapshot(info=info, failed=failed)
    sample = DeviceSample(memory_total=info.memory_total, memory_used=0)
    return DeviceSnapshot(info=info, sample=sample)


async def _footer_keys(pilot: Pilot[Any], screen: CatalogScreen) -> set[str]:
    """The key descriptions the footer draws, once it has drawn them (the footer composes
    its keys after the screen mounts: on a loaded machine, after more than one pause)."""
    await wait_for(pilot, lambda: bool(screen.query(FooterKey)))
    return {str(key.description) for key in screen.query(FooterKey)}


async def test_comparison_uses_the_gpu_chosen_on_the_dashboard() -> None:
    mixed = [device(GTX_1080_TI), device(A100_40), device(L4)]
    async with catalog_screen(mixed, size=(160, 50), gpu=2) as (pilot, screen):
        header = _header(screen)
        assert "compared with GPU 2: L4" in header
        assert "▶ GPU 2 NVIDIA L4" in header and "▶ GPU 0" not in header
        await pick(pilot, "H100 SXM")
        detail = _detail(screen)
        assert "L4" in detail and "(GPU 2)" in detail
        assert "GTX 1080 Ti" not in detail and "A100" not in detail
        # Bandwidth 3350 / 300 (L4) = 11.17; the 1080 Ti's 484 would give 6.92.
        assert "x11.17" in detail and "x6.92" not in detail


async def test_g_steps_through_the_installed_gpus_and_back_to_the_first() -> None:
    mixed = [device(GTX_1080_TI), device(A100_40), device(L4)]
    async with catalog_screen(mixed, size=(160, 50)) as (pilot, screen):
        assert "Next GPU" in await _footer_keys(pilot, screen)
        await pick(pilot, "H100 SXM")
        seen = []
        for _ in range(4):
            detail = _detail(screen)
            seen.append(screen.target_gpu.index if screen.target_gpu else None)
            assert f"(GPU {seen[-1]})" in detail
            assert f"compared with GPU {seen[-1]}" in _header(screen)
            await pilot.press("g")
            await pilot.pause()
        assert seen == [0, 1, 2, 0]
        assert screen.selected is not None and screen.selected.name == "H100 SXM5 80GB"


async def test_one_gpu_has_no_next_gpu_key() -> None:
    async with catalog_screen([A100_80], size=(120, 30)) as (pilot, screen):
        assert "Next GPU" not in await _footer_keys(pilot, screen)
        await pick(pilot, "H100 SXM")
        before = _detail(screen)
        await pilot.press("g")
        await pilot.pause()
        assert _detail(screen) == before


async def test_a_lost_gpu_is_named_with_its_reason_never_compared() -> None:
    mixed = [device(GTX_1080_TI), device(A100_40, failed="GPU is lost"), device(L4)]
    async with catalog_screen(mixed, size=(160, 50), gpu=1) as (pilot, screen):
        header = _header(screen)
        assert "GPU 1 NVIDIA A100-PCIE-40GB: unavailable: GPU is lost" in header
        assert "not compared: GPU 1 is unavailable (GPU is lost)" in header
        table = screen.query_one("#catalog-table", DataTable)
        assert str(table.get_row("A100 PCIe 40 GB")[0]) == ""  # no installed mark
        await pick(pilot, "H100 SXM")
        detail = _detail(screen)
        assert "not compared: GPU 1 is unavailable (GPU is lost)" in detail
        assert "A100" not in detail.split("not compared")[0]  # no A100 column
        assert "ratio" not in detail and "(GPU 1)" not in detail
        await pilot.press("g")  # on to the L4: compared again
        await pilot.pause()
        assert "(GPU 2)" in _detail(screen) and "ratio" in _detail(screen)


async def test_a_gpu_lost_while_the_screen_is_open_stops_being_compared() -> None:
    mixed = [device(GTX_1080_TI), device(L4)]
    async with catalog_screen(mixed, size=(160, 50), gpu=2) as (pilot, screen):
        await pick(pilot, "H100 SXM")
        assert "(GPU 2)" in _detail(screen)
        lost = Snapshot(
            timestamp=1.0, source="nvml", devices=(device(GTX_1080_TI), device(L4, "GPU is lost"))
        )
        screen.update_snapshot(lost)  # what the app calls after each poll
        await pilot.pause()
        assert "not compared: GPU 2 is unavailable (GPU is lost)" in _detail(screen)
        assert "unavailable: GPU is lost" in _header(screen)
        assert "(GPU 2)" not in _detail(screen)


async def test_default_is_the_first_readable_gpu_the_catalog_knows() -> None:
    mixed = [device(UNKNOWN_AMPERE), device(A100_40, failed="GPU is lost"), device(L4)]
    async with catalog_screen(mixed, size=(160, 50)) as (_, screen):
        assert screen.target_gpu == L4
        assert screen.reference is not None and screen.reference.name == "L4"


# ------------------------------------------------------------------ no number is cut


def _whole(value: str, text: str) -> bool:
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
    """A bandwidth of 1008 was once shown as `10`. Every figure appears whole."""
    from gputui.catalog.present import compare, fmt

    async with catalog_screen([installed], size=size) as (pilot, screen):
        await pick(pilot, query)
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
    async with catalog_screen([RTX_4070_TI_SUPER], size=(120, 40)) as (pilot, screen):
        table = screen.query_one("#catalog-table", DataTable)
        row = table.get_row("GeForce RTX 4070 Ti SUPER")
        assert "88.2*" in [str(cell) for cell in row]
        a100 = table.get_row("A100 SXM4 80 GB")
        assert not any(str(cell).endswith("*") for cell in a100)
        await pick(pilot, "3090 Ti")
        text = _plain(screen.query_one("#catalog-detail", Static).content, width=90)
        assert "80*" in text and "derived by an architecture rule" in text
