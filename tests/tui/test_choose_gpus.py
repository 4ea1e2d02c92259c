"""What nvitop users miss: `--only 0,2`, `--respect-cuda-visible-devices`, and
`--models FILE`; a bad choice is one line and exit 2, never an empty dashboard."""

from __future__ import annotations

from typing import Any

import pytest
from demo_driving import ready

from gputui import cli
from gputui.core.errors import UserError
from gputui.sources.base import open_source
from gputui.tui.app import GpuTuiApp
from gputui.tui.views.gpu_choice import ORDER_NOTICE, choose_gpus, parse_cuda_visible
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.process_table import ProcessTable


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--demo", "--only", "0,x"], "--only: '0,x' is not a list of GPU indices"),
        (["--demo", "--only", "0,0"], "names a GPU twice"),
        (["--demo", "--only", "7"], "--only: '7' names no GPU here (GPUs: 0, 1)"),
        (["--demo", "--only", "0", "--respect-cuda-visible-devices"], "choose one"),
        (["--demo", "--models", "/no/such/models.toml"], "--models: /no/such/models.toml"),
    ],
)
def test_bad_choice_is_one_line_and_exit_2(argv: list[str], message: str, capsys: Any) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_cuda_visible_devices_hiding_everything_is_an_error(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert cli.main(["--demo", "--respect-cuda-visible-devices"]) == 2
    assert "hides every GPU" in capsys.readouterr().err


def test_cuda_visible_devices_read_as_cuda_reads_it() -> None:
    assert parse_cuda_visible(None) is None
    assert parse_cuda_visible("") == ()
    assert parse_cuda_visible("1,0") == ("1", "0")
    assert parse_cuda_visible("0,bad,1") == ("0",)  # CUDA stops at the first invalid entry
    assert parse_cuda_visible("GPU-5e3a,1") == ("GPU-5e3a", "1")


async def test_only_shows_the_chosen_gpus_and_their_processes() -> None:
    source, _ = open_source("demo")
    chosen = choose_gpus(source, "1", False)
    app = GpuTuiApp(chosen, card_lookup=None, interval=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        assert [p.index for p in app.dashboard.query(GpuPanel)] == [1]
        table = app.dashboard.query_one(ProcessTable)
        assert {p.gpu_index for p in table.processes.values()} == {1}


async def test_respect_cuda_visible_devices_by_uuid_and_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source, _ = open_source("demo")
    uuid = next(d for d in source.poll().devices if d.index == 1).info.uuid
    assert uuid
    chosen = choose_gpus(source, None, True, {"CUDA_VISIBLE_DEVICES": uuid[:12]})
    assert [d.index for d in chosen.poll().devices] == [1]
    by_index = choose_gpus(source, None, True, {"CUDA_VISIBLE_DEVICES": "0"})
    snap = by_index.poll()
    assert [d.index for d in snap.devices] == [0]
    assert ORDER_NOTICE in snap.notices  # indices: CUDA's order may differ from NVML's
    ordered = choose_gpus(
        source, None, True, {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    )
    assert ORDER_NOTICE not in ordered.poll().notices
    with pytest.raises(UserError):
        choose_gpus(source, None, True, {"CUDA_VISIBLE_DEVICES": "GPU-ffffffff"})


def test_cuda_visible_devices_ends_at_the_first_entry_that_names_no_gpu() -> None:
    """CUDA reads "1,9,0" on a two-GPU box as GPU 1 only: 9 ends the list, 0 is never read."""
    source, _ = open_source("demo")
    chosen = choose_gpus(source, None, True, {"CUDA_VISIBLE_DEVICES": "1,9,0"})
    snap = chosen.poll()
    assert [d.index for d in snap.devices] == [1]
    assert {p.gpu_index for p in snap.processes} == {1}
    with pytest.raises(UserError, match="'9' names no GPU here"):
        choose_gpus(source, None, True, {"CUDA_VISIBLE_DEVICES": "9,0"})
