from __future__ import annotations

from pathlib import Path

import pytest

from gputui.model.snapshot import GpuProcess
from gputui.sources.host import containers
from gputui.sources.host.procfs import ProcfsHost
from gputui.sources.host.source import CONTAINER_NOTICE, HostSampler

DOCKER_ID = "3f9a2c1b7d4e8a6f0c5b2d9e7a1f4c3b6d8e0a2f5c7b9d1e3a5c7e9b1d3f5a7c"
OTHER_ID = "9be41f07c2d35a8e6f1b0c4d7e2a9f8b3c6d1e0f5a4b7c2d9e8f1a0b3c4d5e6f"
POD_UID = "4f6c2a1e-5b7d-4c3e-9a8b-1234567890ab"

CGROUPS = {
    "docker-systemd": f"0::/system.slice/docker-{DOCKER_ID}.scope\n",
    "docker-cgroupfs": "".join(
        f"{n}:{c}:/docker/{DOCKER_ID}\n" for n, c in ((12, "memory"), (11, "cpu,cpuacct"))
    )
    + "0::/\n",
    "containerd": f"0::/system.slice/containerd.service/cri-containerd-{DOCKER_ID}.scope\n",
    "crio": f"0::/machine.slice/crio-{DOCKER_ID}.scope\n",
    "podman": f"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{DOCKER_ID}.scope/container\n",
    "k8s-systemd": (
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
        f"{POD_UID.replace('-', '_')}.slice/cri-containerd-{DOCKER_ID}.scope\n"
    ),
    "k8s-cgroupfs": f"11:memory:/kubepods/besteffort/pod{POD_UID}/{DOCKER_ID}\n",
    "docker-in-docker": f"0::/docker/{OTHER_ID}/docker/{DOCKER_ID}\n",
    "host-session": "0::/user.slice/user-1000.slice/session-3.scope\n",
    "host-init": "0::/init.scope\n",
    "host-v1": "12:memory:/\n11:cpu:/user.slice\n",
    "podman-conmon": f"0::/machine.slice/libpod-conmon-{DOCKER_ID}.scope\n",
}
EXPECTED = {
    "docker-systemd": DOCKER_ID[:12],
    "docker-cgroupfs": DOCKER_ID[:12],
    "containerd": DOCKER_ID[:12],
    "crio": DOCKER_ID[:12],
    "podman": DOCKER_ID[:12],
    "k8s-systemd": "k8s:pod 4f6c2a1e",
    "k8s-cgroupfs": "k8s:pod 4f6c2a1e",
    "docker-in-docker": DOCKER_ID[:12],  # innermost
    "host-session": None,
    "host-init": None,
    "host-v1": None,
    "podman-conmon": None,
}


def make_proc(root: Path, pid: int | str, cgroup: str, nspid: tuple[int, ...] | None = None) -> None:
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "cgroup").write_text(cgroup)
    status = "Name:\tpython\nState:\tS (sleeping)\n"
    if nspid is not None:
        status += "NSpid:\t" + "\t".join(str(n) for n in nspid) + "\n"
    (d / "status").write_text(status)


@pytest.mark.parametrize("kind", sorted(CGROUPS))
def test_container_from_fake_proc(tmp_path: Path, kind: str) -> None:
    make_proc(tmp_path, 4242, CGROUPS[kind], nspid=(4242, 1))
    assert containers.container_of(4242, tmp_path) == EXPECTED[kind]


def test_nspid_is_the_innermost_pid(tmp_path: Path) -> None:
    make_proc(tmp_path, 10, CGROUPS["docker-systemd"], nspid=(10, 533, 7))
    make_proc(tmp_path, 11, CGROUPS["host-session"], nspid=(11,))
    make_proc(tmp_path, 12, CGROUPS["host-session"], nspid=None)  # old kernels have no NSpid
    assert containers.namespace_pid(10, tmp_path) == 7
    assert containers.namespace_pid(11, tmp_path) is None
    assert containers.namespace_pid(12, tmp_path) is None
    assert containers.namespace_pid(13, tmp_path) is None  # gone


def test_missing_pid_has_no_container(tmp_path: Path) -> None:
    assert containers.container_of(999, tmp_path) is None
    assert not containers.pid_visible(999, tmp_path)


@pytest.mark.parametrize(
    ("marker", "self_cgroup", "expected"),
    [
        (None, CGROUPS["host-session"], False),
        (".dockerenv", "0::/\n", True),
        ("run/.containerenv", "0::/\n", True),
        (None, CGROUPS["docker-cgroupfs"], True),
        (None, CGROUPS["k8s-systemd"], True),
    ],
)
def test_running_in_container(tmp_path: Path, marker: str | None, self_cgroup: str, expected: bool) -> None:
    proc, root = tmp_path / "proc", tmp_path / "root"
    root.mkdir()
    make_proc(proc, 1, CGROUPS["host-init"])
    make_proc(proc, "self", self_cgroup)
    if marker:
        (root / marker).parent.mkdir(parents=True, exist_ok=True)
        (root / marker).touch()
    assert containers.running_in_container(proc, root) is expected


SAMPLERS = {
    "psutil": lambda proc, root: HostSampler(proc_root=proc, root=root, hostname="h"),
    "procfs": lambda proc, root: ProcfsHost(proc_root=proc, root=root),  # NVML's on Linux
}


def _sampler_in(tmp_path: Path, in_container: bool, kind: str) -> HostSampler | ProcfsHost:
    proc, root = tmp_path / "proc", tmp_path / "root"
    root.mkdir()
    make_proc(proc, 1, CGROUPS["host-init"])
    make_proc(proc, "self", CGROUPS["docker-systemd"] if in_container else CGROUPS["host-session"])
    return SAMPLERS[kind](proc, root)


@pytest.mark.parametrize("kind", sorted(SAMPLERS))
def test_notice_when_inside_a_container_and_no_pid_is_visible(tmp_path: Path, kind: str) -> None:
    sampler = _sampler_in(tmp_path, in_container=True, kind=kind)
    # PIDs from the host namespace: neither psutil nor our /proc knows them.
    procs = [GpuProcess(0, 3_999_991, "compute"), GpuProcess(1, 3_999_992, "compute")]
    out = sampler.enrich(procs)
    assert [p.host_visible for p in out] == [False, False]
    assert sampler.notices() == (CONTAINER_NOTICE,)
    sampler.enrich(procs)
    assert sampler.notices() == (CONTAINER_NOTICE,)  # once


@pytest.mark.parametrize("kind", sorted(SAMPLERS))
def test_no_notice_on_the_host(tmp_path: Path, kind: str) -> None:
    sampler = _sampler_in(tmp_path, in_container=False, kind=kind)
    sampler.enrich([GpuProcess(0, 3_999_991, "compute")])
    assert sampler.notices() == ()


@pytest.mark.parametrize("kind", sorted(SAMPLERS))
def test_no_notice_when_some_pids_are_visible(tmp_path: Path, kind: str) -> None:
    import os

    sampler = _sampler_in(tmp_path, in_container=True, kind=kind)
    make_proc(tmp_path / "proc", os.getpid(), CGROUPS["host-session"])
    sampler.enrich([GpuProcess(0, os.getpid(), "compute"), GpuProcess(0, 3_999_991, "compute")])
    assert sampler.notices() == ()


def test_enrich_reads_container_from_proc_root(tmp_path: Path) -> None:
    import os

    proc = tmp_path / "proc"
    make_proc(proc, os.getpid(), CGROUPS["docker-systemd"], nspid=(os.getpid(), 12))
    sampler = HostSampler(proc_root=proc, root=tmp_path, hostname="h")
    (p,) = sampler.enrich([GpuProcess(0, os.getpid(), "compute")])
    assert p.host_visible and p.container == DOCKER_ID[:12] and p.container_pid == 12
