#!/usr/bin/env python3
"""Exporter soak (issue 20): normal scrapes under idle, slowloris and half-handshake clients.

    PYTHONPATH=src .venv/bin/python benchmarks/exporter_soak.py [--minutes 20]
        [--scrapers 8] [--idle 8] [--slow 8] [--half 8]

Starts `gputui exporter --source demo` twice on loopback (plain HTTP, and
HTTPS with a self-signed certificate made by the `openssl` command) and for
--minutes runs against each, in bounded loops that stop by themselves:

- scrapers: one GET /metrics every 0.5 s each, timed (10 s client timeout);
- idle clients: connect and send nothing, reconnect when the server closes;
- slowloris clients: a request head one byte every 3 s, reconnect when cut off
  (over TLS after a full handshake);
- half handshakes: half a ClientHello on the TLS server (half a request line
  on the plain one), reconnect when cut off.

Prints per server: scrapes, failures, p50/p99/max latency of the normal
scrapes, how many took over 1 s, how often the server cut off each hostile
kind, and the exporter's thread count and RSS at the start and the end.
Target (issue 20): no failure and every normal scrape under 1 s. A script,
not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import select
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HALF_CLIENT_HELLO = bytes.fromhex("1603010200010001fc0303") + bytes(range(16))
HALF_REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
SLOW_HEAD = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 4096


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    cut: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, what: str) -> None:
        with self.lock:
            self.failures += 1
            self.errors[what] = self.errors.get(what, 0) + 1

    def cut_off(self, kind: str) -> None:
        with self.lock:
            self.cut[kind] = self.cut.get(kind, 0) + 1


class Exporter:
    def __init__(self, name: str, extra: list[str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gputui", "exporter", "--source", "demo",
             "--listen", "127.0.0.1:0", "--interval", "1", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stderr is not None
        self.url = ""
        for _ in range(50):
            line = self.proc.stderr.readline()
            found = re.search(r"serving (https?://\S+/metrics)", line)
            if found:
                self.url = found.group(1)
                break
            if not line:
                break
        if not self.url:
            self.stop()
            raise SystemExit(f"{name}: the exporter did not start")
        self.host, port = self.url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)
        self.port = int(port)
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if len(self.stderr_lines) < 20:
                self.stderr_lines.append(line.rstrip())

    def threads_and_rss(self) -> tuple[int, int]:
        values = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            values[key] = rest.split()
        return int(values["Threads"][0]), int(values["VmRSS"][0])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_closed(sock: socket.socket, stop_at: float) -> bool:
    """Read until the server closes `sock`; False if the soak ends first."""
    while (left := stop_at - time.monotonic()) > 0:
        ready, _, _ = select.select([sock], [], [], min(left, 1.0))
        if ready:
            try:
                if not sock.recv(4096):
                    return True
            except OSError:
                return True
    return False


def scraper(exp: Exporter, ctx: ssl.SSLContext | None, tally: Tally, stop_at: float) -> None:
    while time.monotonic() < stop_at:
        start = time.monotonic()
        try:
            with urllib.request.urlopen(exp.url, context=ctx, timeout=10) as resp:
                resp.read()
                ok = resp.status == 200
            if ok:
                with tally.lock:
                    tally.latencies.append(time.monotonic() - start)
            else:
                tally.fail(f"HTTP {resp.status}")
        except OSError as exc:
            tally.fail(type(exc).__name__ + ": " + str(exc)[:80])
        time.sleep(max(0.0, 0.5 - (time.monotonic() - start)))


def hostile(
    kind: str, exp: Exporter, ctx: ssl.SSLContext | None, tally: Tally, stop_at: float
) -> None:
    while time.monotonic() < stop_at:
        try:
            sock = socket.create_connection((exp.host, exp.port), timeout=10)
        except OSError:
            time.sleep(0.5)
            continue
        try:
            if kind == "idle":
                closed = wait_closed(sock, stop_at)
            elif kind == "half":
                sock.sendall(HALF_CLIENT_HELLO if ctx is not None else HALF_REQUEST)
                closed = wait_closed(sock, stop_at)
            else:  # slowloris
                if ctx is not None:
                    sock = ctx.wrap_socket(sock, server_hostname=exp.host)
                closed = False
                for byte in SLOW_HEAD:
                    if time.monotonic() >= stop_at:
                        break
                    sock.send(bytes([byte]))
                    if wait_closed(sock, min(stop_at, time.monotonic() + 3.0)):
                        closed = True
                        break
        except OSError:
            closed = True
        finally:
            sock.close()
        if closed:
            tally.cut_off(kind)


def make_cert(folder: Path) -> tuple[Path, Path] | None:
    if shutil.which("openssl") is None:
        return None
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(exp: Exporter, tally: Tally, start: tuple[int, int], end: tuple[int, int]) -> None:
    lat = tally.latencies
    print(f"\n== {exp.name}: {exp.url}")
    print(f"scrapes answered   {len(lat)}")
    print(f"failures           {tally.failures}   (target 0)")
    for what, count in sorted(tally.errors.items(), key=lambda kv: -kv[1])[:5]:
        print(f"    {count:6d} x {what}")
    if lat:
        print(
            f"latency ms         p50 {statistics.median(lat) * 1000:.1f}   "
            f"p99 {percentile(lat, 0.99) * 1000:.1f}   max {max(lat) * 1000:.1f}"
        )
        print(f"over 1 s           {sum(x > 1.0 for x in lat)}   (target 0)")
    cut = ", ".join(f"{k} {v}" for k, v in sorted(tally.cut.items())) or "none"
    print(f"cut off by server  {cut}")
    print(f"exporter threads   {start[0]} at start, {end[0]} at end")
    print(f"exporter RSS MiB   {start[1] / 1024:.1f} at start, {end[1] / 1024:.1f} at end")
    if exp.stderr_lines:
        print("exporter stderr   ", *exp.stderr_lines[:5], sep="\n    ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--scrapers", type=int, default=8)
    ap.add_argument("--idle", type=int, default=8)
    ap.add_argument("--slow", type=int, default=8)
    ap.add_argument("--half", type=int, default=8)
    args = ap.parse_args()
    if not 0 < args.minutes <= 24 * 60:
        raise SystemExit("--minutes: expected more than 0 and at most 1440")
    for name in ("scrapers", "idle", "slow", "half"):
        if not 0 <= getattr(args, name) <= 200:
            raise SystemExit(f"--{name}: expected 0 to 200")
    with tempfile.TemporaryDirectory(prefix="gputui-soak-") as tmp:
        pair = make_cert(Path(tmp))
        servers: list[tuple[Exporter, ssl.SSLContext | None]] = []
        try:
            servers.append((Exporter("plain HTTP", []), None))
            if pair is None:
                print("no openssl command: the TLS server is skipped")
            else:
                tls = Exporter("TLS", ["--tls-cert", str(pair[0]), "--tls-key", str(pair[1])])
                servers.append((tls, ssl.create_default_context(cafile=str(pair[0]))))
            time.sleep(1.5)  # a first poll
            stop_at = time.monotonic() + args.minutes * 60
            print(
                f"soak: {args.minutes:g} min; per server {args.scrapers} scrapers, {args.idle} idle, "
                f"{args.slow} slowloris, {args.half} half-handshake clients",
                flush=True,
            )
            tallies = [Tally() for _ in servers]
            starts = [exp.threads_and_rss() for exp, _ in servers]
            threads: list[threading.Thread] = []
            for (exp, ctx), tally in zip(servers, tallies, strict=True):
                threads += [
                    threading.Thread(target=scraper, args=(exp, ctx, tally, stop_at), daemon=True)
                    for _ in range(args.scrapers)
                ]
                for kind, count in (
                    ("idle", args.idle),
                    ("slowloris", args.slow),
                    ("half", args.half),
                ):
                    threads += [
                        threading.Thread(
                            target=hostile, args=(kind, exp, ctx, tally, stop_at), daemon=True
                        )
                        for _ in range(count)
                    ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=max(0.0, stop_at - time.monotonic()) + 15)
            ends = [exp.threads_and_rss() for exp, _ in servers]
            for (exp, _), tally, start, end in zip(servers, tallies, starts, ends, strict=True):
                report(exp, tally, start, end)
        finally:
            for exp, _ in servers:
                exp.stop()


if __name__ == "__main__":
    main()
