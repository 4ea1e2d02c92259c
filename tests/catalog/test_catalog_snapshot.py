"""SVG snapshot of the Catalog screen with a comparison open, at 80x24.

The baseline is in tests/catalog/__snapshots__/; after a deliberate change to the screen
or to the figures of the cards shown, regenerate it with
`pytest tests/catalog/test_catalog_snapshot.py --snapshot-update` and look at it.
"""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.pilot import Pilot

from gputui.telemetry.snapshot import DeviceInfo
from gputui.tui.catalog_screen import CatalogScreen

INSTALLED = DeviceInfo(
    index=0,
    name="NVIDIA GeForce RTX 4070 Ti SUPER",
    memory_total=16376 * 1024 * 1024,
    compute_capability="8.9",
)


class Host(App[None]):
    def on_mount(self) -> None:
        self.push_screen(CatalogScreen([INSTALLED]))


def test_catalog_compare_80x24(snap_compare: Any) -> None:
    async def open_comparison(pilot: Pilot[Any]) -> None:
        await pilot.pause()
        await pilot.press("slash", *"3090 Ti", "enter")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause(0.2)

    assert snap_compare(Host(), terminal_size=(80, 24), run_before=open_comparison)
