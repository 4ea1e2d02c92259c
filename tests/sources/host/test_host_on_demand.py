"""The details dialog's environment read and the tree view's parents, against real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from gputui.sources.host.source import gpu_environment, read_ancestors, read_extras

CHILD_ENV = {
    "PATH": os.environ.get("PATH", ""),
    "CUDA_VISIBLE_DEVICES": "1,3",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    "NCCL_DEBUG": "INFO",
    "NCCL_IB_AUTH_TOKEN": "hunter2",  # a secret under an allowed prefix: skipped
    "TF_VAR_db_password": "hunter2",
    "XLA_FLAGS": "--xla_gpu_autotune_level=0\x1b]0;owned\x07",
    "LOCAL_RANK": "0",
    "SLURM_JOB_ID": "4242",
    "AWS_SECRET_ACCESS_KEY": "hunter2",
    "HOME": "/root",
}


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=CHILD_ENV)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # until exec has replaced the environment
            try:
                if psutil.Process(proc.pid).environ().get("LOCAL_RANK") == "0":
                    break
            except psutil.Error:
                pass
            time.sleep(0.02)
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_environment_keeps_gpu_variables_only_and_never_secrets(
    child: subprocess.Popen[bytes],
) -> None:
    started = psutil.Process(child.pid).create_time()
    extras = read_extras(child.pid, started)
    env = extras.environment
    assert env is not None, extras.environment_note
    assert env["CUDA_VISIBLE_DEVICES"] == "1,3"
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert env["NCCL_DEBUG"] == "INFO"
    assert env["LOCAL_RANK"] == "0" and env["SLURM_JOB_ID"] == "4242"
    assert "\x1b" not in env["XLA_FLAGS"] and "\x07" not in env["XLA_FLAGS"]
    assert not {"PATH", "HOME", "NCCL_IB_AUTH_TOKEN", "TF_VAR_db_password"} & set(env)
    assert "hunter2" not in repr(extras)


def test_environment_of_a_reused_or_exited_pid_is_not_read(
    child: subprocess.Popen[bytes],
) -> None:
    started = psutil.Process(child.pid).create_time()
    stranger = read_extras(child.pid, started - 60)  # the listing said it started earlier
    assert stranger.environment is None
    assert stranger.environment_note == "not read: the PID now names another process"
    child.kill()
    child.wait()
    gone = read_extras(child.pid, started)
    assert gone.environment is None and gone.environment_note is not None
    assert "exited" in gone.environment_note


def test_long_values_are_bounded() -> None:
    env = gpu_environment({"NCCL_SOCKET_IFNAME": "x" * 5000, "RANK": "3"})
    assert len(env["NCCL_SOCKET_IFNAME"]) <= 300 and env["RANK"] == "3"


def test_ancestors_are_the_parent_chain_up_to_init() -> None:
    # a python that starts a sleeping grandchild: grandchild -> child -> this test
    code = (
        "import subprocess, sys, time;"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']);"
        "print(p.pid, flush=True); time.sleep(30)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        grandchild = int(parent.stdout.readline())
        chains = read_ancestors([grandchild, os.getpid(), 0, 2**22 + 7])
        chain = chains[grandchild]
        assert [pid for pid, _ in chain[:2]] == [parent.pid, os.getpid()]
        assert chain[0][1].startswith("python")
        assert all(pid > 1 for pid, _ in chain)
        assert chains[os.getpid()] == chain[2:]
        assert 0 not in chains and 2**22 + 7 not in chains
    finally:
        for p in psutil.Process(parent.pid).children():
            p.kill()
        parent.kill()
        parent.wait()
