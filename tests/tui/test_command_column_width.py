"""A column empty on every row (Container) is hidden, and the command gets
the width (nvitop shows about 55 characters at 120 columns; 17 were left here)."""

from __future__ import annotations

from dataclasses import replace

from conftest import make_process, make_snapshot
from demo_driving import app_for, ready

from gputui.tui.widgets.process_table import ProcessTable


async def test_empty_container_column_hidden_and_command_wide_120() -> None:
    app = app_for("mig.toml")  # no process in a container
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        keys = [c.key for c in table.shown]
        assert "container" not in keys
        width = table.columns[table._column_key("command")].width
        assert width >= 40


async def test_container_column_comes_back_with_a_container_process() -> None:
    app = app_for("mig.toml", interval=30.0)  # no poll replaces the snapshot given below
    async with app.run_test(size=(200, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        assert "container" not in [c.key for c in table.shown]
        snap = make_snapshot(
            processes=(make_process(0, 1001), make_process(1, 1002, container="k8s:ns/pod"))
        )
        await app.apply_snapshot(replace(snap, timestamp=snap.timestamp + 1))
        await pilot.pause(0.05)
        assert "container" in [c.key for c in table.shown]
        assert "k8s:ns/pod" in table.row_text("1:1002")


def test_interpreter_paths_are_cut_to_their_name() -> None:
    from gputui.tui.views.process_columns import short_command

    pyenv = make_process(
        0, 1, cmdline=("/home/al/.pyenv/versions/3.11.7/bin/python3", "train.py", "--lr=3e-4")
    )
    assert short_command(pyenv) == "python3 train.py --lr=3e-4"
    venv = make_process(0, 2, cmdline=("/opt/venv/bin/python3.11", "-m", "vllm"))
    assert short_command(venv) == "python3.11 -m vllm"
    # Not an interpreter: the path says which program it is.
    xorg = make_process(0, 3, cmdline=("/usr/lib/xorg/Xorg", "vt1"))
    assert short_command(xorg) == "/usr/lib/xorg/Xorg vt1"
    # A script given by its path stays whole (only the interpreter's path is cut).
    assert short_command(make_process(0, 4, cmdline=("python", "/srv/job/train.py"))) == (
        "python /srv/job/train.py"
    )


async def test_command_column_is_wider_at_120_and_scrolls_sideways() -> None:
    long_args = " ".join(f"--option-{i}=value-{i}" for i in range(12))
    pyenv = "/home/al/.pyenv/versions/3.11.7/bin/python3"
    proc = make_process(0, 4242, cmdline=(pyenv, "train.py", *long_args.split()))
    app = app_for("mig.toml", interval=3600.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        snap = make_snapshot(processes=(proc,))
        await app.apply_snapshot(replace(snap, timestamp=snap.timestamp + 1))
        await pilot.pause(0.1)
        table = app.dashboard.query_one(ProcessTable)
        assert table.columns[table._column_key("command")].width >= 50  # nvitop: 55
        row = table.row_text("0:4242")[-1]
        assert "python3 train.py --option-0" in row and ".pyenv" not in row
        table.focus()
        await pilot.press("right", "right")
        await pilot.pause(0.1)
        scrolled = table.row_text("0:4242")[-1]
        assert "python3 train.py" not in scrolled and "…" in scrolled
        assert "--option-11=value-11" in scrolled or "option-" in scrolled
        await pilot.press("left", "left")
        await pilot.pause(0.1)
        assert table.row_text("0:4242")[-1].startswith("python3 train.py --option-0")
