"""The history view (`h`): power, temperature, PCIe per GPU over 1 / 5 / 15 min."""

from __future__ import annotations

import re

from gputui.history.metrics import History
from gputui.model.snapshot import DeviceSnapshot, Snapshot
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.history import HistoryScreen
from gputui.tui.widgets.history_chart import HistoryChart, buckets, chart_rows
from tests.waiting import wait_for

from .conftest import make_app, make_device, make_snapshot


class TimedSource:
    """One poll per call, one simulated second apart, GPU 0's power climbing 10 W a poll."""

    name = "simulated"

    def __init__(self, lost_after: int | None = None) -> None:
        self.polls = 0
        self.lost_after = lost_after

    def poll(self) -> Snapshot:
        self.polls += 1
        n = self.polls
        gpu0 = make_device(0, power_w=100.0 + 10 * n, temperature_c=40 + n)
        if self.lost_after is not None and n > self.lost_after:
            gpu0 = DeviceSnapshot(info=gpu0.info, failed="GPU is lost (fell off the bus)")
        return make_snapshot(timestamp=1_700_000_000.0 + n, devices=(gpu0, make_device(1)))

    def close(self) -> None:
        pass


def screen_text(app: GpuTuiApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_h_opens_the_history_and_it_follows_the_polls() -> None:
    source = TimedSource()
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: source.polls >= 3)
        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        await wait_for(pilot, lambda: source.polls >= 6)
        await pilot.pause(0.1)
        text = screen_text(app)
        assert "GPU 0: NVIDIA GeForce RTX 3090" in text
        assert "last 5 min" in text
        for label in ("GPU util", "Memory", "Power", "Temp", "PCIe rx", "PCIe tx"):
            assert label in text
        power = next(line for line in text.splitlines() if line.strip().startswith("Power"))
        # The newest power reading, the first one kept, and the card's 350 W limit as the scale.
        now = re.search(r"now (\d+) W", power)
        assert now is not None and int(now.group(1)) >= 160 and int(now.group(1)) % 10 == 0
        assert "min 110 W" in power
        assert "scale 0-350 W" in power
        # it keeps following the polls while it is open
        before = power
        await wait_for(pilot, lambda: source.polls >= 9)
        await pilot.pause(0.1)
        after = next(ln for ln in screen_text(app).splitlines() if ln.strip().startswith("Power"))
        assert after != before


async def test_window_and_gpu_keys() -> None:
    source = TimedSource()
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: source.polls >= 2)
        await pilot.press("h")
        await pilot.press("w")
        assert "last 15 min" in screen_text(app)
        await pilot.press("1")
        assert "last 1 min" in screen_text(app)
        await pilot.press("right")
        assert "GPU 1: NVIDIA A100-SXM4-80GB" in screen_text(app)
        await pilot.press("right")  # wraps round
        assert "GPU 0:" in screen_text(app)
        await pilot.press("escape")
        assert app.screen is app.dashboard
        await pilot.press("s")  # the dashboard's own keys work again


async def test_history_screen_keys_do_not_reach_the_dashboard() -> None:
    source = TimedSource()
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: source.polls >= 2)
        await pilot.press("h")
        await pilot.press("p")  # the dashboard's pause: not a key here
        assert app.paused is False


async def test_a_lost_gpu_says_why_and_keeps_its_history() -> None:
    source = TimedSource(lost_after=3)
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: source.polls >= 5)
        await pilot.press("h")
        await pilot.pause(0.1)
        text = screen_text(app)
        assert "no new readings: GPU is lost (fell off the bus)" in text
        power = next(ln for ln in text.splitlines() if ln.strip().startswith("Power"))
        assert "now 130 W" in power  # the last reading before it was lost


def test_chart_rows_fixed_scale_and_right_aligned() -> None:
    assert chart_rows([0.0, 50.0, 100.0], 4, 2, 100.0) == ["   █", "  ██"]
    # a value over the scale is clipped to the top, not a taller chart
    assert chart_rows([250.0], 1, 1, 100.0) == ["█"]


def test_buckets_keep_a_short_spike() -> None:
    values = [1.0] * 899 + [99.0]
    cols = buckets(values, 60)
    assert len(cols) == 60
    assert max(cols) == 99.0


def test_history_window_bounded_and_spaced() -> None:
    h = History(maxlen=900, min_spacing_s=1.0)
    for t in range(2000):  # four polls a second for 500 s
        h.add(make_snapshot(timestamp=t * 0.25, devices=(make_device(0, util=t % 100),)))
    assert len(h.series(0, "utilization")) == 500  # one point per second, the last value wins
    assert h.series(0, "utilization")[-1] == 1999 % 100
    assert len(h.window(0, "utilization", 60)) == 61
    assert h.window(0, "pcie_rx", 10) == [2048.0] * 11
    for t in range(500, 2000):  # then one a second
        h.add(make_snapshot(timestamp=float(t), devices=(make_device(0),)))
    assert len(h.series(0, "utilization")) == 900  # bounded
    assert h.span_s(0) == 899.0


def test_history_chart_repaints_only_on_change() -> None:
    chart = HistoryChart()
    calls: list[bool] = []
    chart.refresh = lambda *a, **k: calls.append(True)  # type: ignore[method-assign]
    chart.set_data(350.0, lambda m: [1.0, 2.0])
    chart.set_data(350.0, lambda m: [1.0, 2.0])
    assert len(calls) == 1
    chart.set_data(350.0, lambda m: [1.0, 3.0])
    assert len(calls) == 2
