"""The tree layout alone, and tagged kills deduplicated per PID (no Textual needed)."""

from __future__ import annotations

from gputui.tui.views.kill import Identity, KillPolicy
from gputui.tui.views.process_tree import layout

from .conftest import make_process


def test_a_gpu_process_under_another_gpu_process_and_unknown_parents_as_roots() -> None:
    a, b, c = make_process(0, 10), make_process(1, 11), make_process(0, 12)
    rows = [("0:10", a), ("1:11", b), ("0:12", c), ("1:10", make_process(1, 10))]
    # 11 was started by 10 (both on GPUs); nothing is known of 12's parents.
    tree = layout(rows, {10: ((5, "sh"),), 11: ((10, "python"), (5, "sh"))})
    assert [(r.key, r.prefix) for r in tree] == [
        (":5", ""),
        ("0:10", "└─ "),
        ("1:10", "└─ "),  # the same process on its second GPU, at the same place
        ("1:11", "   └─ "),
        ("0:12", ""),
    ]
    assert tree[0].proc is None and tree[0].name == "sh"


def test_siblings_keep_the_table_order() -> None:
    rows = [(f"0:{pid}", make_process(0, pid)) for pid in (30, 20, 40)]
    tree = layout(rows, {pid: ((7, "torchrun"),) for pid in (20, 30, 40)})
    assert [r.key for r in tree] == [":7", "0:30", "0:20", "0:40"]
    assert [r.prefix for r in tree] == ["", "├─ ", "├─ ", "└─ "]


def test_tagged_kill_checks_each_pid_once() -> None:
    policy = KillPolicy(is_root=lambda: True, identify=lambda pid: Identity(pid, 0.0, 0))
    procs = [make_process(0, 5, running_s=None), make_process(1, 5, running_s=None)]
    procs.append(make_process(0, 6, running_s=None, host_visible=False))
    allowed, refused = policy.check_all(procs)
    assert [ident.pid for _, ident in allowed] == [5]
    assert len(refused) == 1 and "PID 6 is not visible" in refused[0]
