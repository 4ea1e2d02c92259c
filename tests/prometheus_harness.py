"""A real Prometheus server and a static dcgm-exporter endpoint, for the cluster tests and benchmark.

`PrometheusServer` runs Debian's `prometheus` binary as our own child process
on a free loopback port with a generated config and a temporary storage
folder; the package's system service is never used (it may not even be
running, and its port and scrape config are not ours).

`ExporterProcess` runs `gputui exporter` as a user starts it.

`StaticEndpoint` serves text in dcgm-exporter's exposition (written from its
documented default counters, etc/default-counters.csv) from a thread in this
process; tests change what it serves to inject faults.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.waiting import poll_until

PROMETHEUS = shutil.which("prometheus")


class _QuietServer(ThreadingHTTPServer):
    """A scrape Prometheus cancelled (connection reset) is not printed: socketserver would
    write its traceback to whatever sys.stderr is then, maybe another test's capture."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrometheusServer:
    def __init__(
        self,
        folder: Path,
        targets: Sequence[str],
        *,
        interval: str = "1s",
        port: int | None = None,
    ) -> None:
        if PROMETHEUS is None:
            raise RuntimeError("the prometheus binary is not installed")
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.interval = interval
        self.targets = list(targets)
        self.proc: subprocess.Popen[bytes] | None = None
        self.write_config()

    def write_config(self) -> None:
        jobs = "\n".join(
            f"  - job_name: t{i}\n    static_configs: [{{targets: ['{t}']}}]"
            for i, t in enumerate(self.targets)
        )
        (self.folder / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {self.interval}\n  scrape_timeout: {self.interval}\n"
            f"scrape_configs:\n{jobs}\n"
        )

    def start(self) -> PrometheusServer:
        self.log = open(self.folder / "prometheus.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                str(PROMETHEUS),
                f"--config.file={self.folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=1h",
                "--query.lookback-delta=1m",
            ],
            stdout=self.log,
            stderr=self.log,
        )
        self._wait(lambda: self._get("/-/ready") is not None, "ready")
        return self

    def _get(self, path: str) -> bytes | None:
        try:
            with urllib.request.urlopen(self.url + path, timeout=2) as r:
                return bytes(r.read())
        except OSError:
            return None

    def _wait(self, ok: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
        def done() -> bool | None:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.tail()}")
            return True if ok() else None

        if poll_until(done, timeout, step=0.1) is None:
            raise RuntimeError(f"prometheus not {what} after {timeout:g} s: {self.tail()}")

    def tail(self) -> str:
        path = self.folder / "prometheus.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def targets_up(self) -> bool:
        body = self._get("/api/v1/targets")
        if body is None:
            return False
        active = json.loads(body)["data"]["activeTargets"]
        return len(active) == len(self.targets) and all(t["health"] == "up" for t in active)

    def wait_targets_up(self, timeout: float = 30.0) -> None:
        self._wait(self.targets_up, "scraping every target", timeout)

    def query(self, expr: str) -> list[dict[str, object]]:
        body = self._get("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        return list(json.loads(body)["data"]["result"]) if body else []

    def wait_for(self, expr: str, count: int, timeout: float = 30.0) -> None:
        self._wait(lambda: len(self.query(expr)) >= count, f"returning {count} for {expr}", timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if getattr(self, "log", None):
            self.log.close()


DCGM_LABELS = (
    'gpu="{gpu}",UUID="{uuid}",pci_bus_id="00000000:{bus:02X}:00.0",device="nvidia{gpu}",'
    'modelName="{model}",{host_label}="{host}"'
)


def dcgm_text(
    host: str,
    gpus: int = 8,
    *,
    model: str = "NVIDIA H100 80GB HBM3",
    total_mib: int = 81559,
    host_label: str = "Hostname",
    uuid_label: str = "UUID",
    used_mib: Callable[[int], float] | None = None,
    skip: Sequence[str] = (),
    nan: Sequence[str] = (),
    timestamp_ms: int | None = None,
    duplicate: bool = False,
) -> str:
    """One host's dcgm-exporter page: the default counters that gputui reads."""
    lines = []
    ts = f" {timestamp_ms}" if timestamp_ms is not None else ""
    fields = {
        "DCGM_FI_DEV_SM_CLOCK": ("gauge", lambda g: 1980.0),
        "DCGM_FI_DEV_MEM_CLOCK": ("gauge", lambda g: 2619.0),
        "DCGM_FI_DEV_GPU_TEMP": ("gauge", lambda g: 40.0 + 3 * g),
        "DCGM_FI_DEV_POWER_USAGE": ("gauge", lambda g: 150.0 + 40 * g),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("counter", lambda g: 1e9 + g),
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": ("counter", lambda g: 0.0),
        "DCGM_FI_DEV_GPU_UTIL": ("gauge", lambda g: float(10 * g % 100)),
        "DCGM_FI_DEV_MEM_COPY_UTIL": ("gauge", lambda g: float(5 * g % 100)),
        "DCGM_FI_DEV_ENC_UTIL": ("gauge", lambda g: 0.0),
        "DCGM_FI_DEV_DEC_UTIL": ("gauge", lambda g: 0.0),
        "DCGM_FI_DEV_XID_ERRORS": ("gauge", lambda g: 0.0),
        "DCGM_FI_DEV_FB_FREE": (
            "gauge",
            lambda g: total_mib - (used_mib(g) if used_mib else 1000.0 * g),
        ),
        "DCGM_FI_DEV_FB_USED": ("gauge", lambda g: used_mib(g) if used_mib else 1000.0 * g),
    }
    for name, (kind, value) in fields.items():
        if name in skip:
            continue
        lines.append(f"# HELP {name} {name} from dcgm-exporter's default counters.")
        lines.append(f"# TYPE {name} {kind}")
        for g in range(gpus):
            labels = DCGM_LABELS.format(
                gpu=g,
                uuid=f"GPU-{abs(hash((host, g))) % 10**12:012d}-0000-0000-0000-000000000000",
                bus=g + 1,
                model=model,
                host=host,
                host_label=host_label,
            ).replace('UUID="', f'{uuid_label}="')
            v = "NaN" if name in nan else repr(float(value(g)))
            lines.append(f"{name}{{{labels}}} {v}{ts}")
            if duplicate and g == 0:
                lines.append(f"{name}{{{labels}}} {v}{ts}")
    return "\n".join(lines) + "\n"


class PageHTTP:
    """A threaded loopback server answering GET with `body_for(path)` as a Prometheus text
    page (404 where it gives None): the one page server of the tests and benchmarks."""

    def __init__(self, body_for: Callable[[str], bytes | None]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                body = body_for(self.path.split("?", 1)[0])
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.address = f"127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def stop_all(servers: Sequence[PageHTTP]) -> None:
    """Stop many page servers at once: each `shutdown` waits for its serve loop's next poll."""
    threads = [threading.Thread(target=s.stop) for s in servers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class StaticEndpoint(PageHTTP):
    """Serves `self.text` on /metrics; assign a new text (or a function) to change it."""

    def __init__(self, text: str | Callable[[], str]) -> None:
        self.text = text
        super().__init__(self._body)

    def _body(self, path: str) -> bytes:
        return (self.text() if callable(self.text) else self.text).encode()


class ExporterProcess:
    """`gputui exporter` as a user starts it, on a port the OS picked."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gputui", "exporter", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.lines: list[str] = []
        self.url = self._wait_for_url()

    def _wait_for_url(self, timeout: float = 20.0) -> str:
        stderr = self.proc.stderr
        assert stderr is not None

        def next_line() -> str | None:
            """The URL once a line announces it, "" when stderr ends, else None (read on)."""
            line = stderr.readline()
            if not line:
                return ""
            self.lines.append(line.rstrip("\n"))
            found = re.search(r"serving (https?://\S+/metrics)", line)
            return found.group(1) if found else None

        url = poll_until(next_line, timeout, step=0)
        if url:
            return url
        self.stop()
        raise AssertionError(f"exporter did not start: {self.lines}")

    @property
    def address(self) -> str:
        return self.url.split("://", 1)[1].rsplit("/", 1)[0]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
