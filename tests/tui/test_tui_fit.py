"""The Fit screen as a user meets it: an untrusted ./gputui.toml, estimates that take long,
lost GPUs, and its own keys only."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from gputui.fit import check as entry_check
from gputui.fit import paths
from gputui.fit.graph.estimate import check as real_check
from gputui.model.snapshot import DeviceSnapshot, Snapshot
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.fit import FitScreen
from gputui.tui.views import fit_pass
from gputui.tui.views.fit_pass import estimate_pass
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "models.toml"
TINY = '[[model]]\nname = "tiny"\ninput_shape = [4]\nlayers = [ { type = "Dense", units = 2 } ]\n'
OTHER_UID = 4242


# -- ./gputui.toml is read only when it is trustworthy ---------------------------------------


@pytest.fixture
def no_user_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(paths, "user_models_file", lambda: tmp_path / "no-such-user-file.toml")


def _resolve(cwd: Path) -> tuple[tuple[Path, str], list[str]]:
    warnings: list[str] = []
    return paths.resolve_models_path(None, cwd=cwd, warn=warnings.append), warnings


def test_own_local_models_file_is_used(tmp_path: Path, no_user_file: None) -> None:
    local = tmp_path / "gputui.toml"
    local.write_text(TINY)
    local.chmod(0o644)
    (path, origin), warnings = _resolve(tmp_path)
    assert (path, origin, warnings) == (local, "./gputui.toml", [])


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_someone_elses_local_models_file_is_skipped_with_a_warning(
    tmp_path: Path, no_user_file: None
) -> None:
    local = tmp_path / "gputui.toml"
    local.write_text(TINY)
    os.chown(local, OTHER_UID, OTHER_UID)
    (path, origin), warnings = _resolve(tmp_path)
    assert origin == "shipped examples" and path == paths.shipped_examples()
    assert len(warnings) == 1 and f"uid {OTHER_UID}" in warnings[0] and "gputui.toml" in warnings[0]


def test_world_writable_local_models_file_is_skipped(tmp_path: Path, no_user_file: None) -> None:
    local = tmp_path / "gputui.toml"
    local.write_text(TINY)
    local.chmod(0o666)
    (path, origin), warnings = _resolve(tmp_path)
    assert origin == "shipped examples"
    assert len(warnings) == 1 and "anyone may write" in warnings[0]


@pytest.mark.skipif(os.geteuid() != 0, reason="lchown to another uid needs root")
def test_planted_symlink_to_my_file_is_skipped(tmp_path: Path, no_user_file: None) -> None:
    mine = tmp_path / "secret.txt"
    mine.write_text("not a models file")
    local = tmp_path / "gputui.toml"
    local.symlink_to(mine)
    os.lchown(local, OTHER_UID, OTHER_UID)
    (_, origin), warnings = _resolve(tmp_path)
    assert origin == "shipped examples" and "the link belongs to uid" in warnings[0]


def test_warning_goes_to_stderr_by_default(tmp_path: Path, no_user_file: None, capsys: Any) -> None:
    local = tmp_path / "gputui.toml"
    local.write_text(TINY)
    local.chmod(0o666)
    paths.resolve_models_path(None, cwd=tmp_path)
    assert "gputui: warning: not reading" in capsys.readouterr().err


# -- estimates never run on the UI thread --------------------------------------------------


def test_a_pass_over_its_budget_stops_and_says_so(snapshot_factory: Any) -> None:
    ticks = iter(range(1000))
    calls: list[str] = []

    def estimate(model: Any, target: Any) -> Any:
        calls.append(model.name)
        return real_check(model, target)

    result = estimate_pass(
        EXAMPLES,
        snapshot_factory(2),
        None,
        budget_s=3.0,
        clock=lambda: float(next(ticks)),
        estimate=estimate,
    )
    assert result.models and 0 < len(result.checks) < 2 * len(result.models)
    assert result.stopped is not None and "budget" in result.stopped
    assert len(calls) == len(result.checks)


async def test_a_slow_estimate_blocks_neither_the_screen_nor_quitting(
    monkeypatch: pytest.MonkeyPatch, scripted_source: Any
) -> None:
    """An estimate that takes forever (a hostile models file): keys still work, q still quits."""
    entered, release = threading.Event(), threading.Event()

    def stuck(request: Any) -> Any:
        entered.set()
        release.wait(timeout=60)
        return entry_check(request)

    monkeypatch.setattr(fit_pass, "check", stuck)
    source = scripted_source
    app = GpuTuiApp(
        source, interval=0.05, clock=lambda: "01:02:03", card_lookup=None, models_path=EXAMPLES
    )
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.latest_snapshot is not None)
            await pilot.press("f")
            screen = app.screen
            assert isinstance(screen, FitScreen)
            await wait_for(pilot, entered.is_set)
            polls = source.polls
            await wait_for(pilot, lambda: source.polls > polls + 3)  # the app keeps polling
            assert screen.busy
            await wait_for(
                pilot, lambda: "Estimating" in str(screen.query_one("#fit-source").render())
            )
            await pilot.press("escape")
            assert app.screen is app.dashboard  # the screen answered while the worker is stuck
            await pilot.press("f")
            await pilot.press("q")
            await wait_for(pilot, lambda: app._exit, timeout=5)
            assert entered.is_set() and not release.is_set()  # still stuck when the app quit
    finally:
        release.set()


# -- lost and unreadable GPUs are never a place a model fits -------------


def _lost_snapshot(make_snapshot: Any, make_device: Any) -> Snapshot:
    good = make_device(0)
    lost = DeviceSnapshot(info=make_device(1).info, sample=None, failed="GPU is lost")
    blind = make_device(2, memory_total=None)
    blind = DeviceSnapshot(
        info=type(blind.info)(index=2, name="NVIDIA T4"),
        sample=blind.sample,
        unsupported=frozenset({"memory_total", "memory_used", "memory_free"}),
    )
    return make_snapshot(3, devices=(good, lost, blind))


async def test_lost_gpu_is_listed_with_its_reason_not_as_fitting(
    tmp_path: Path, scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    models = tmp_path / "models.toml"
    shutil.copy(EXAMPLES, models)
    shutil.copytree(EXAMPLES.parent / "llm", tmp_path / "llm")  # its hf_config files
    source = scripted_source
    source.next_snapshot = _lost_snapshot(snapshot_factory, device_factory)
    app = GpuTuiApp(
        source, interval=0.05, clock=lambda: "01:02:03", card_lookup=None, models_path=models
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.press("f")
        screen = app.screen
        assert isinstance(screen, FitScreen)
        await wait_for(pilot, lambda: screen.passes > 0 and not screen.busy and screen.checks)
        assert {c.target.index for c in screen.checks} == {0}
        lost = {u.index: u.reason for u in screen.unavailable}
        assert lost[1] == "GPU is lost" and "NotSupported" in lost[2]
        table = screen.query_one("#fit-table")
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        lost_rows = [r for r in rows if r[1].startswith("1:")]
        assert len(lost_rows) == 1 and lost_rows[0][2] == "unavailable"
        assert "GPU is lost" in lost_rows[0][3]
        assert rows.index(lost_rows[0]) < 2  # listed first, not below the fold
        await pilot.press("r")  # reloading does not bring it back as a target
        await wait_for(pilot, lambda: not screen.busy)
        assert all(c.target.index == 0 for c in screen.checks)
        screen.query_one("#fit-table").move_cursor(row=rows.index(lost_rows[0]))
        detail = screen.query_one("#fit-detail", Static)
        await wait_for(pilot, lambda: "GPU is lost" in str(detail.content))


# -- each screen obeys only its own keys ---------------------------------


async def test_dashboard_keys_do_nothing_on_the_fit_screen_and_are_not_in_its_footer(
    scripted_source: Any,
) -> None:
    source = scripted_source
    app = GpuTuiApp(
        source, interval=0.05, clock=lambda: "01:02:03", card_lookup=None, models_path=EXAMPLES
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        table = app.dashboard.query_one(ProcessTable)
        before = (table.sort_column, table.sort_reverse)
        await pilot.press("f")
        screen = app.screen
        assert isinstance(screen, FitScreen)
        await pilot.press("s", "slash", "p", "k")
        await pilot.pause()
        assert app.screen is screen
        assert (table.sort_column, table.sort_reverse) == before and not app.paused
        shown = {b.binding.description for b in screen.active_bindings.values() if b.binding.show}
        assert not shown & {"Sort", "Filter", "Kill", "Pause"}, shown
        assert "Back" in shown
        await pilot.press("escape", "s")
        assert table.sort_column != before[0]  # and on the dashboard they still work
