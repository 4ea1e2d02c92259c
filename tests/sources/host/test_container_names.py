"""Kubernetes pods and containers by name, from cgroup paths and the runtimes' state files."""

from __future__ import annotations

import json
from pathlib import Path

from gputui.sources.host import containers
from gputui.sources.host.containers import ContainerRef

CID = "3f9a2c1b7d4e8a6f0c5b2d9e7a1f4c3b6d8e0a2f5c7b9d1e3a5c7e9b1d3f5a7c"
POD_UID = "4f6c2a1e-5b7d-4c3e-9a8b-1234567890ab"
K8S_SYSTEMD = (
    "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
    f"{POD_UID.replace('-', '_')}.slice/cri-containerd-{CID}.scope\n"
)
K8S_CGROUPFS = f"11:memory:/kubepods/besteffort/pod{POD_UID}/{CID}\n"
K8S_CRIO = f"0::/kubepods.slice/kubepods-pod{POD_UID.replace('-', '_')}.slice/crio-{CID}.scope\n"


def _proc(proc_root: Path, pid: int, cgroup: str) -> None:
    (proc_root / str(pid)).mkdir(parents=True)
    (proc_root / str(pid) / "cgroup").write_text(cgroup)


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))


def test_pod_uid_and_container_id_from_systemd_and_cgroupfs_paths() -> None:
    for text, runtime in ((K8S_SYSTEMD, "containerd"), (K8S_CGROUPFS, "kubernetes")):
        ref = containers.container_ref_from_cgroup(text)
        assert ref == ContainerRef(runtime=runtime, id=CID, pod_uid=POD_UID)
        assert ref.label == "k8s:pod 4f6c2a1e"
    crio = containers.container_ref_from_cgroup(K8S_CRIO)
    assert crio is not None and (crio.runtime, crio.id) == ("cri-o", CID)


def test_containerd_bundle_names_the_pod(tmp_path: Path) -> None:
    proc, root = tmp_path / "proc", tmp_path / "root"
    _proc(proc, 77, K8S_SYSTEMD)
    _write_json(
        root / "run/containerd/io.containerd.runtime.v2.task/k8s.io" / CID / "config.json",
        {
            "annotations": {
                "io.kubernetes.cri.sandbox-name": "trainer-0",
                "io.kubernetes.cri.sandbox-namespace": "ml",
                "io.kubernetes.cri.container-name": "worker",
            }
        },
    )
    ref = containers.container_ref_of(77, proc, root)
    assert ref is not None
    assert (ref.pod, ref.name, ref.pod_uid) == ("ml/trainer-0", "worker", POD_UID)
    assert ref.label == "ml/trainer-0"
    assert containers.container_of(77, proc, root) == "ml/trainer-0"
    # Without access to the runtime's state, the cgroup's UID is all there is.
    assert containers.container_of(77, proc) == "k8s:pod 4f6c2a1e"


def test_crio_bundle_names_the_pod(tmp_path: Path) -> None:
    proc, root = tmp_path / "proc", tmp_path / "root"
    _proc(proc, 78, K8S_CRIO)
    _write_json(
        root / "run/containers/storage/overlay-containers" / CID / "userdata/config.json",
        {"annotations": {"io.kubernetes.pod.name": "infer", "io.kubernetes.pod.namespace": "a"}},
    )
    assert containers.container_of(78, proc, root) == "a/infer"


def test_docker_name_from_its_config(tmp_path: Path) -> None:
    proc, root = tmp_path / "proc", tmp_path / "root"
    _proc(proc, 79, f"0::/system.slice/docker-{CID}.scope\n")
    _write_json(root / "var/lib/docker/containers" / CID / "config.v2.json", {"Name": "/llm"})
    assert containers.container_of(79, proc, root) == "llm"


def test_hostile_or_broken_state_files_fall_back_to_the_id(tmp_path: Path) -> None:
    proc, root = tmp_path / "proc", tmp_path / "root"
    _proc(proc, 80, f"0::/system.slice/docker-{CID}.scope\n")
    config = root / "var/lib/docker/containers" / CID / "config.v2.json"
    config.parent.mkdir(parents=True)
    config.write_text("{not json")
    assert containers.container_of(80, proc, root) == CID[:12]
    config.write_text(json.dumps({"Name": "/x\x1b]0;owned\x07"}))
    label = containers.container_of(80, proc, root)
    assert label is not None and "\x1b" not in label and "\x07" not in label
    config.write_text(json.dumps({"Name": 42}))
    assert containers.container_of(80, proc, root) == CID[:12]
