#!/usr/bin/env python3
"""Exporter soak: normal scrapes under idle, slowloris, half-handshake and hostile-header clients.

    PYTHONPATH=src .venv/bin/python benchmarks/exporter_soak.py [--minutes 20]
        [--scrapers 8] [--idle 8] [--slow 8] [--half 8] [--headers 4]

Starts `gputui exporter --source demo` twice on loopback (plain HTTP, and
HTTPS with a self-signed certificate made by the `openssl` command) and for
--minutes runs against each, in bounded loops that stop by themselves:

- scrapers: one GET /metrics every 0.5 s each, timed (10 s client timeout);
- idle clients: connect and send nothing, reconnect when the server closes;
- slowloris clients: a request head one byte every 3 s, reconnect when cut off
  (over TLS after a full handshake);
- half handshakes: half a ClientHello on the TLS server (half a request line
  on the plain one), reconnect when cut off;
- hostile headers: one whole request after another with a hostile Accept,
  Accept-Encoding, Authorization, method, path or header bytes (a rotating
  list, see HOSTILE), each answer's status counted; a 5xx is a failure.

Prints per server: scrapes, failures, p50/p99/max latency of the normal
scrapes, how many took over 1 s, how often the server cut off each hostile
kind, the hostile requests by kind and status, every line the exporter wrote
to stderr after its start line (and how many were tracebacks), and the
exporter's thread count and RSS at the start and the end. Target: no failure,
every normal scrape under 1 s, no traceback and a bounded log. A script, not a
test: it prints figures and asserts nothing.
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


def _request(method: bytes, path: bytes, *headers: bytes) -> bytes:
    return b"%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n" % (
        method,
        path,
        b"".join(h + b"\r\n" for h in headers),
    )


# (kind, request bytes): what a client controls in one request.
HOSTILE: tuple[tuple[str, bytes], ...] = (
    (
        "accept openmetrics version=abc",
        _request(b"GET", b"/metrics", b"Accept: application/openmetrics-text; version=abc"),
    ),
    (
        "accept text/plain version=1.0.x",
        _request(b"GET", b"/metrics", b"Accept: text/plain; version=1.0.x"),
    ),
    (
        "accept escaping=bogus",
        _request(
            b"GET", b"/metrics", b"Accept: application/openmetrics-text; version=1.0.0; escaping=x"
        ),
    ),
    ("accept 8 KiB", _request(b"GET", b"/metrics", b"Accept: " + b"text/plain;q=0.1," * 480)),
    (
        "accept bidi+controls",
        _request(b"GET", b"/metrics", b"Accept: text/plain; version=\xe2\x80\xae1\x1b[2J"),
    ),
    ("accept non-UTF-8", _request(b"GET", b"/metrics", b"Accept: \xff\xfe; version=\xc0")),
    ("accept-encoding odd", _request(b"GET", b"/metrics", b"Accept-Encoding: gzip;q=abc, \xff")),
    ("authorization junk", _request(b"GET", b"/metrics", b"Authorization: Basic !!!\xff")),
    (
        "authorization huge",
        _request(b"GET", b"/metrics", b"Authorization: Basic " + b"QUFB" * 2000),
    ),
    ("method BREW", _request(b"BREW", b"/metrics")),
    ("method HEAD", _request(b"HEAD", b"/metrics")),
    ("method POST", _request(b"POST", b"/metrics", b"Content-Length: 5") + b"hello"),
    ("path traversal", _request(b"GET", b"/../../etc/passwd")),
    ("path controls", _request(b"GET", b"/metrics%00%1b[2J?name[]=\xff")),
    ("path query names", _request(b"GET", b"/metrics?name[]=DCGM_FI_DEV_GPU_TEMP&name[]=%ff")),
    ("header folded", _request(b"GET", b"/metrics", b"Accept: text/plain;", b" version=1.0.0")),
    ("header 99 of them", _request(b"GET", b"/metrics", *(b"X-%d: y" % i for i in range(99)))),
    ("request line junk", b"\x16\x03\x01 / HTTP/9.9\r\n\r\n"),
)


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    cut: dict[str, int] = field(default_factory=dict)
    hostile: dict[str, dict[str, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, what: str) -> None:
        with self.lock:
            self.failures += 1
            self.errors[what] = self.errors.get(what, 0) + 1

    def answered(self, kind: str, status: str) -> None:
        with self.lock:
            by_status = self.hostile.setdefault(kind, {})
            by_status[status] = by_status.get(status, 0) + 1

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
        self.stderr_count = 0
        self.tracebacks = 0
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_count += 1
            self.tracebacks += line.startswith("Traceback")
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


def header_client(
    exp: Exporter, ctx: ssl.SSLContext | None, tally: Tally, stop_at: float, first: int
) -> None:
    """Hostile requests one after another, each answer's status line counted by kind."""
    index = first
    while time.monotonic() < stop_at:
        kind, request = HOSTILE[index % len(HOSTILE)]
        index += 1
        try:
            with socket.create_connection((exp.host, exp.port), timeout=10) as raw:
                sock = ctx.wrap_socket(raw, server_hostname=exp.host) if ctx is not None else raw
                sock.sendall(request)
                answer = b""
                while len(answer) < 64 and (chunk := sock.recv(4096)):
                    answer += chunk
            parts = answer.split(b" ", 2)
            if not answer:
                status = "closed"
            elif answer.startswith(b"HTTP/") and len(parts) > 1:
                status = parts[1].decode("ascii", "replace")
            else:
                status = "no status line"
        except OSError as exc:
            status = type(exc).__name__
        tally.answered(kind, status)
        if status.startswith("5"):
            tally.fail(f"{kind}: HTTP {status}")
        time.sleep(0.05)


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
    if tally.hostile:
        total = sum(sum(v.values()) for v in tally.hostile.values())
        print(f"hostile requests   {total}, by kind and status:")
        for kind, by_status in sorted(tally.hostile.items()):
            shown = ", ".join(f"{k} x{v}" for k, v in sorted(by_status.items()))
            print(f"    {kind:34} {shown}")
    print(
        f"exporter stderr    {exp.stderr_count} lines after the start line, "
        f"{exp.tracebacks} tracebacks   (target 0 tracebacks)"
    )
    print(f"exporter threads   {start[0]} at start, {end[0]} at end")
    print(f"exporter RSS MiB   {start[1] / 1024:.1f} at start, {end[1] / 1024:.1f} at end")
    if exp.stderr_lines:
        print("first lines:", *exp.stderr_lines[:5], sep="\n    ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--scrapers", type=int, default=8)
    ap.add_argument("--idle", type=int, default=8)
    ap.add_argument("--slow", type=int, default=8)
    ap.add_argument("--half", type=int, default=8)
    ap.add_argument("--headers", type=int, default=4, help="hostile-header clients per server")
    args = ap.parse_args()
    if not 0 < args.minutes <= 24 * 60:
        raise SystemExit("--minutes: expected more than 0 and at most 1440")
    for name in ("scrapers", "idle", "slow", "half", "headers"):
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
                f"{args.slow} slowloris, {args.half} half-handshake, {args.headers} hostile-header clients",
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
                threads += [
                    threading.Thread(
                        target=header_client, args=(exp, ctx, tally, stop_at, i * 5), daemon=True
                    )
                    for i in range(args.headers)
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
