"""The dashboard's fit line and the Fit screen on a GPU in MIG mode, and the
Fit screen opened on the GPU selected on the dashboard ("the Fit comparisons
against the selected GPU, today always GPU 0").

At the pynvml boundary (tests/sources/nvml/conftest.py's fake): GPU 0 is an A100 80 GB
split 3g.40gb / 2g.20gb / 1g.10gb with 42.56 GiB free on the card but 15.81 GiB at most in
one instance, as in ../shared/fakenvml's mig scenario; GPU 1 an RTX 3090. The job is
examples/models.toml's llama-3-8b-lora (a 20.36 GiB peak): it must not be said to fit GPU 0.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pynvml
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from gputui.fit import TransformerCheck
from gputui.sources.nvml.source import NvmlSource
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.fit import FitScreen
from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
MiB = 1 << 20
GiB = 1 << 30


def _nvml_fakes() -> Any:
    """tests/sources/nvml/conftest.py, loaded by path (pytest loads each folder's apart)."""
    name = "_fit_mig_nvml_fakes"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, ROOT / "tests" / "sources" / "nvml" / "conftest.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def mig_nvml(monkeypatch: pytest.MonkeyPatch) -> Any:
    fakes = _nvml_fakes()
    a100, rtx = fakes.two_gpus()[1], fakes.two_gpus()[0]
    a100.index, rtx.index = 0, 1
    a100.memory_total = 81920 * MiB
    a100.memory_used = a100.memory_total - int(42.56 * GiB)
    a100.mig = pynvml.NVML_DEVICE_MIG_ENABLE
    a100.errors["nvmlDeviceGetUtilizationRates"] = pynvml.NVML_ERROR_NOT_SUPPORTED
    a100.compute = [(2001, 23 * GiB), (2002, 9 * GiB)]
    a100.util_samples = []
    a100.instances = {2001: (1, 0), 2002: (2, 0)}

    def mig(index: int, gi: int, profile: str, total_mib: int, used: int) -> Any:
        return fakes.FakeMig(
            a100,
            index,
            gpu_instance=gi,
            name=f"NVIDIA A100-SXM4-80GB MIG {profile}",
            uuid=f"MIG-{gi}1111111-2222-3333-4444-555555555555",
            memory_total=total_mib * MiB,
            memory_used=used,
        )

    a100.migs = [
        mig(0, 1, "3g.40gb", 40192, 24000 * MiB),  # 15.81 GiB free
        mig(1, 2, "2g.20gb", 19968, 9 * GiB),
        mig(2, 3, "1g.10gb", 9984, 2 * GiB),
    ]
    fake = fakes.FakeNvml([a100, rtx])
    fake.install(monkeypatch)
    return fake


@pytest.fixture
def models(tmp_path: Path) -> Path:
    path = tmp_path / "models.toml"
    config = (ROOT / "examples" / "llm" / "llama-3-8b.json").as_posix()
    path.write_text(
        '[[model]]\nname = "llama-3-8b-lora"\nkind = "transformer"\n'
        f'hf_config = "{config}"\nmode = "train"\nmethod = "lora"\nlora_rank = 16\n'
        "seq_len = 2048\nbatch_size = 1\ngrad_checkpointing = true\n"
    )
    return path


def _app(models: Path) -> GpuTuiApp:
    source = NvmlSource.open(with_host=False)
    return GpuTuiApp(
        source, interval=0.05, clock=lambda: "01:02:03", card_lookup=None, models_path=models
    )


async def _ready(pilot: Pilot[Any], app: GpuTuiApp) -> FitLine:
    line = app.dashboard.query_one(FitLine)
    table = app.dashboard.query_one(ProcessTable)
    await wait_for(pilot, lambda: line.passes > 0 and table.row_count > 0)
    return line


async def _fit_screen(pilot: Pilot[Any], app: GpuTuiApp) -> FitScreen:
    await pilot.press("f")
    await wait_for(pilot, lambda: isinstance(app.screen, FitScreen) and app.screen.passes > 0)
    screen = app.screen
    assert isinstance(screen, FitScreen)
    return screen


def _cell(screen: FitScreen, row: int, column: str) -> str:
    table = screen.query_one("#fit-table", DataTable)
    return str(table.get_cell_at((row, [c.key.value for c in table.ordered_columns].index(column))))


async def test_fit_line_judges_each_mig_instance_not_the_card(mig_nvml: Any, models: Path) -> None:
    app = _app(models)
    async with app.run_test(size=(160, 40)) as pilot:
        line = await _ready(pilot, app)
        lines = [t.plain for t in line.per_gpu]
        gpu0 = [ln for ln in lines if ln.startswith("Fit GPU 0")]
        assert [ln.split(":")[0] for ln in gpu0] == [
            "Fit GPU 0 MIG 3g.40gb (GI 1 / CI 0)",
            "Fit GPU 0 MIG 2g.20gb (GI 2 / CI 0)",
            "Fit GPU 0 MIG 1g.10gb (GI 3 / CI 0)",
        ]
        assert not any("fits now" in ln for ln in gpu0), gpu0
        assert all("not: llama-3-8b-lora" in ln for ln in gpu0), gpu0
        summary = line._lines[0].plain
        assert "2 GPUs" in summary and "on none: llama-3-8b-lora" in summary, summary


async def test_fit_screen_rows_are_the_instances_with_the_profile_advice(
    mig_nvml: Any, models: Path
) -> None:
    app = _app(models)
    async with app.run_test(size=(160, 50)) as pilot:
        await _ready(pilot, app)
        screen = await _fit_screen(pilot, app)
        gpus = [_cell(screen, n, "gpu") for n in range(len(screen.rows))]
        assert gpus[:3] == [
            "0: MIG 3g.40gb (GI 1 / CI 0)",
            "0: MIG 2g.20gb (GI 2 / CI 0)",
            "0: MIG 1g.10gb (GI 3 / CI 0)",
        ]
        assert [_cell(screen, n, "verdict") for n in range(3)] == ["does not fit"] * 3
        assert {c.target.memory_total for c in screen.checks} == {
            40192 * MiB,
            19968 * MiB,
            9984 * MiB,
            24 * GiB,
        }  # never the card's 80 GiB
        detail = str(screen.query_one("#fit-detail", Static).content.renderables[0])  # type: ignore[attr-defined]
        assert detail.startswith("MIG on GPU 0: fits the 3g.40gb (GI 1 / CI 0) once 4.6 GiB")
        assert "an empty instance needs 3g.40gb" in detail


async def test_fit_screen_opens_on_the_focused_gpu_panel(mig_nvml: Any, models: Path) -> None:
    app = _app(models)
    async with app.run_test(size=(160, 50)) as pilot:
        await _ready(pilot, app)
        panel = next(p for p in app.dashboard.query(GpuPanel) if p.index == 1)
        panel.focus()
        await pilot.pause(0.05)
        screen = await _fit_screen(pilot, app)
        table = screen.query_one("#fit-table", DataTable)
        assert table.cursor_row == 0
        row = screen.rows[0]
        assert isinstance(row, TransformerCheck) and row.target.index == 1
        assert _cell(screen, 0, "gpu") == "1: RTX 3090"


async def test_fit_screen_opens_on_the_selected_process_mig_instance(
    mig_nvml: Any, models: Path
) -> None:
    app = _app(models)
    async with app.run_test(size=(160, 50)) as pilot:
        await _ready(pilot, app)
        table = app.dashboard.query_one(ProcessTable)
        key = "0:2002"  # the job in GI 2 (2g.20gb)
        await wait_for(pilot, lambda: key in table.visible_keys())
        table.focus()
        table.move_cursor(row=table.visible_keys().index(key))
        await pilot.pause(0.05)
        assert table.selected is not None and table.selected.gpu_instance_id == 2
        screen = await _fit_screen(pilot, app)
        fit_table = screen.query_one("#fit-table", DataTable)
        assert _cell(screen, fit_table.cursor_row, "gpu") == "0: MIG 2g.20gb (GI 2 / CI 0)"


def test_an_instance_free_memory_moving_starts_a_pass() -> None:
    """The card's free memory is unchanged while a job in one instance allocates: the fit
    line must still see it (its pass inputs include each instance's free memory)."""
    from dataclasses import replace

    from gputui.model.snapshot import MigDevice
    from gputui.tui.widgets.fit_line import change, pass_inputs

    from .conftest import make_device, make_snapshot

    def snap(instance_free: int) -> Any:
        dev = make_device(1, used_gib=20.0, memory_free=60 * GiB)
        migs = (
            MigDevice(0, 1, 0, profile="3g.40gb", memory_total=39 * GiB, memory_free=instance_free),
        )
        return make_snapshot(devices=(replace(dev, mig_devices=migs),))

    assert change(pass_inputs(snap(30 * GiB)), pass_inputs(snap(30 * GiB))) is None
    assert change(pass_inputs(snap(30 * GiB)), pass_inputs(snap(20 * GiB))) == "free"
    assert change(pass_inputs(snap(30 * GiB)), pass_inputs(snap(30 * GiB + 1))) is None


def test_free_only_refresh_follows_each_instance_as_a_full_pass(models: Path) -> None:
    """The fit line's cheap refresh reads each instance's own free memory, not the card's."""
    from dataclasses import replace

    from gputui.model.snapshot import MigDevice
    from gputui.tui.views.fit_pass import estimate_pass
    from gputui.tui.widgets.fit_line import FreeOnly, fit_lines, recommended_only

    from .conftest import make_device, make_snapshot

    def snap(free_a: int, free_b: int) -> Any:
        dev = make_device(1, used_gib=20.0, memory_free=60 * GiB)
        migs = (
            MigDevice(0, 1, 0, profile="3g.40gb", memory_total=39 * GiB, memory_free=free_a),
            MigDevice(1, 2, 0, profile="2g.20gb", memory_total=19 * GiB, memory_free=free_b),
        )
        return make_snapshot(devices=(replace(dev, mig_devices=migs),))

    def full(s: Any, previous: Any) -> Any:
        return estimate_pass(models, s, previous, rank=False, estimate=recommended_only)

    first = full(snap(15 * GiB, 5 * GiB), None)
    assert [t.mig.gpu_instance_id for t in first.targets if t.mig] == [1, 2]
    later = snap(30 * GiB, 18 * GiB)
    cheap = FreeOnly().refresh(first, later)
    assert cheap is not None
    assert [t.memory_free for t in cheap.targets] == [30 * GiB, 18 * GiB]
    assert [ln.plain for ln in fit_lines(cheap)] == [
        ln.plain for ln in fit_lines(full(later, first))
    ]
    assert "fits now: llama-3-8b-lora" in fit_lines(cheap)[0].plain
