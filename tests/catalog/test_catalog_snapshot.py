"""SVG snapshots of the Catalog screen with a comparison open.

The baselines are in tests/catalog/__snapshots__/; after a deliberate change to the screen
or to the figures of the cards shown, regenerate them with
`pytest tests/catalog/test_catalog_snapshot.py --snapshot-update` and look at them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.app import App
from textual.pilot import Pilot

from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot
from gputui.tui.screens.catalog import CatalogScreen

MIB = 1024 * 1024


def gpu(index: int, name: str, mib: int, cc: str) -> DeviceInfo:
    return DeviceInfo(index=index, name=name, memory_total=mib * MIB, compute_capability=cc)


INSTALLED = gpu(0, "NVIDIA GeForce RTX 4070 Ti SUPER", 16376, "8.9")
# The faults scenario's box: three models, GPU 1 fallen off the bus.
MIXED = (
    DeviceSnapshot(
        info=gpu(0, "NVIDIA GeForce GTX 1080 Ti", 11264, "6.1"),
        sample=DeviceSample(memory_total=11264 * MIB),
    ),
    DeviceSnapshot(info=gpu(1, "NVIDIA A100-PCIE-40GB", 40960, "8.0"), failed="GPU is lost"),
    DeviceSnapshot(
        info=gpu(2, "NVIDIA L4", 23034, "8.9"), sample=DeviceSample(memory_total=23034 * MIB)
    ),
)


class Host(App[None]):
    def __init__(self, installed: Sequence[DeviceInfo | DeviceSnapshot], gpu: int | None) -> None:
        super().__init__()
        self.installed, self.gpu = installed, gpu

    def on_mount(self) -> None:
        self.push_screen(CatalogScreen(self.installed, gpu=self.gpu))


def _open_comparison(query: str, *keys: str) -> Any:
    async def run(pilot: Pilot[Any]) -> None:
        await pilot.pause()
        await pilot.press("slash", *query, "enter")
        await pilot.pause()
        await pilot.press("enter", *keys)
        await pilot.pause(0.2)

    return run


def test_catalog_compare_80x24(snap_compare: Any) -> None:
    opened = _open_comparison("3090 Ti")
    assert snap_compare(Host([INSTALLED], None), terminal_size=(80, 24), run_before=opened)


def test_catalog_mixed_gpus_lost_one_120x30(snap_compare: Any) -> None:
    """Opened on GPU 0, `g` twice (past the lost A100, named and unmarked): the L4 is compared."""
    opened = _open_comparison("H100 SXM", "g", "g")
    assert snap_compare(Host(MIXED, 0), terminal_size=(120, 30), run_before=opened)
