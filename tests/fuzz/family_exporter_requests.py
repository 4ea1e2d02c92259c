"""Fuzz family "exporter_requests": hostile requests against a running `gputui exporter`.

Two exporters run on loopback with the simulated source, started once per
worker process: one plain, one with TLS and basic auth. A case is one request
with a hostile method, path, header set (Accept versions and escapings,
Accept-Encoding, Authorization, Content-Length, Transfer-Encoding, folded,
repeated, huge or non-Latin-1 headers) or request line, sent raw. Judged:

- a 500 or 503 answer, or a 200 for /metrics on the auth server without the
  right credentials: a wrong accept;
- a traceback on the exporter's stderr: a traceback; more than one line of
  log for the one request: a wrong accept (a log flood on demand);
- the exporter gone, or a normal scrape right after that is not answered 200:
  a wrong accept (one request broke the server);
- any 2xx/3xx: accepted; a 4xx, 501, 505 or a closed connection: rejected.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from random import Random

import generators as gen

FAMILY = "exporter_requests"
USER, PASSWORD = "scraper", "s3cret"
GOOD_AUTH = b"Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode())

METHODS = [b"GET", b"GET", b"GET", b"HEAD", b"POST", b"PUT", b"DELETE", b"OPTIONS", b"BREW",
           b"get", b"G\x00ET", b"GET\x1b[2J", b"", b"M" * 2000]  # fmt: skip
PATHS = [b"/metrics", b"/metrics", b"/", b"/metrics?name[]=DCGM_FI_DEV_GPU_TEMP",
         b"/metrics?name[]=%ff%fe&name[]=", b"/metrics?" + b"a=1&" * 2000, b"/%00", b"/../../etc/passwd",
         b"*", b"//metrics", b"/metrics#x", b"/metrics\x1b[2J", b"/\xff\xfe", b"/" + b"a" * 60000,
         b"http://127.0.0.1/metrics", b"metrics", b"/favicon.ico"]  # fmt: skip
VERSIONS = [
    b"HTTP/1.1",
    b"HTTP/1.0",
    b"HTTP/1.1",
    b"HTTP/2.0",
    b"HTTP/9.9",
    b"HTTP/1.1x",
    b"",
    b"http/1.1",
]
ACCEPTS = [b"application/openmetrics-text; version=abc", b"text/plain; version=1.0.x",
           b"application/openmetrics-text; version=1.0.0; escaping=allow-utf-8",
           b"application/openmetrics-text; version=1.0.0; escaping=bogus",
           b"application/openmetrics-text; version=99.99.99", b"text/plain; version=\xc2\xb2",
           b"text/plain; version=1.0.0\xe2\x80\xae", b"text/plain;;;version==;", b"*/*",
           b"application/openmetrics-text; version=" + b"9" * 5000, b"\xff\xfe\xfd",
           b"text/plain; version=1.0.0; escaping=values, application/openmetrics-text",
           b"application/openmetrics-text;version=0.0.1", b"text/html;q=abc"]  # fmt: skip
ENCODINGS = [b"gzip", b"gzip;q=abc", b"identity;q=0, *;q=0", b"\xff", b"br, zstd, gzip;q=0.1",
             b"gzip" * 1000]  # fmt: skip
AUTHS = [b"Basic !!!", b"Basic " + base64.b64encode(b"scraper:wrong"), b"Basic " + base64.b64encode(b":"),
         b"Basic " + base64.b64encode(b"\xff\xfe:\xff"), b"Bearer x", b"Basic", b"basic " + b"A" * 40000,
         b"Basic " + base64.b64encode(f"{USER}:{PASSWORD}\x00".encode()), GOOD_AUTH,
         b"Basic " + base64.b64encode(f"{USER.upper()}:{PASSWORD}".encode())]  # fmt: skip
OTHER = [(b"Content-Length", b"99999999999999999999"), (b"Content-Length", b"-1"),
         (b"Content-Length", b"5"), (b"Transfer-Encoding", b"chunked"), (b"Host", b""),
         (b"Host", b"\x1b[2J"), (b"Connection", b"keep-alive, Upgrade"), (b"Expect", b"100-continue"),
         (b"X-Long", b"x" * 30000), (b"X-\xff", b"v"), (b"Bad Name", b"v"), (b"", b"v"),
         (b"X-Fold", b"a\r\n b"), (b"X-Latin", b"caf\xe9")]  # fmt: skip


@dataclass
class Case:
    server: str  # "plain" or "auth"
    method: bytes
    path: bytes
    version: bytes
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""

    def raw(self) -> bytes:
        line = b" ".join(p for p in (self.method, self.path, self.version) if p)
        heads = b"".join(k + b": " + v + b"\r\n" for k, v in self.headers)
        return line + b"\r\n" + heads + b"\r\n" + self.body

    def authorized(self) -> bool:
        return self.server == "plain" or (b"Authorization", GOOD_AUTH) in self.headers


def make_case(rng: Random) -> Case:
    # Mostly a well-formed scrape with one or two hostile parts, so the hostile header
    # reaches the application instead of stopping at the request-line parser.
    case = Case(
        server=rng.choice(["plain", "auth"]),
        method=b"GET" if rng.random() < 0.6 else rng.choice(METHODS),
        path=b"/metrics" if rng.random() < 0.5 else rng.choice(PATHS),
        version=b"HTTP/1.1" if rng.random() < 0.8 else rng.choice(VERSIONS),
    )
    if rng.random() < 0.9:
        case.headers.append((b"Host", b"127.0.0.1"))
    if rng.random() < 0.7:
        case.headers.append((b"Accept", rng.choice(ACCEPTS)))
    if rng.random() < 0.4:
        case.headers.append((b"Accept-Encoding", rng.choice(ENCODINGS)))
    if rng.random() < 0.5:
        case.headers.append((b"Authorization", rng.choice(AUTHS)))
    for _ in range(rng.choice([0, 0, 0, 1, 2, 150] if rng.random() < 0.9 else [150])):
        case.headers.append(rng.choice(OTHER))
    if rng.random() < 0.2:
        case.body = rng.choice([b"hello", b"\x00" * 100, b"x" * 70000])
    return case


def case_text(case: Case) -> str:
    return repr(case.raw()[:4000])


# --- the exporters, one pair per process ---------------------------------------------------


@dataclass
class Exporter:
    proc: subprocess.Popen[bytes]
    log: Path
    port: int
    context: ssl.SSLContext | None

    def log_text(self) -> str:
        return self.log.read_bytes().decode("utf-8", "replace")


_STARTED: dict[int, dict[str, Exporter]] = {}


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _start(folder: Path, name: str, extra: list[str], context: ssl.SSLContext | None) -> Exporter:
    log = folder / f"{name}.log"
    with log.open("wb") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gputui", "exporter", "--source", "demo", "--listen",
             "127.0.0.1:0", "--interval", "1", *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=handle,
            preexec_fn=_die_with_parent,
        )  # fmt: skip
    atexit.register(proc.kill)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(rb"serving https?://127\.0\.0\.1:(\d+)/metrics", log.read_bytes())
        if found:
            return Exporter(proc, log, int(found.group(1)), context)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"exporter {name} did not start: {log.read_bytes()[-500:]!r}")


def exporters() -> dict[str, Exporter]:
    """The plain and the TLS + basic-auth exporter of this process (started at first use)."""
    pair = _STARTED.get(os.getpid())
    if pair is not None and all(e.proc.poll() is None for e in pair.values()):
        return pair
    folder = Path(tempfile.mkdtemp(prefix="gputui-fuzz-exporter-"))
    if shutil.which("openssl") is None:
        raise RuntimeError("the exporter_requests family needs the openssl command")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    users = folder / "users"
    users.write_text(f"{USER}:{PASSWORD}\n")
    users.chmod(0o600)
    context = ssl.create_default_context(cafile=str(folder / "cert.pem"))
    pair = {
        "plain": _start(folder, "plain", [], None),
        "auth": _start(
            folder, "auth",
            ["--tls-cert", str(folder / "cert.pem"), "--tls-key", str(folder / "key.pem"),
             "--basic-auth-file", str(users)],
            context,
        ),
    }  # fmt: skip
    _STARTED[os.getpid()] = pair
    return pair


def exchange(exp: Exporter, raw: bytes, timeout: float = 8.0) -> bytes:
    """Send `raw`, read the answer until the server closes (or 64 KiB of it)."""
    with socket.create_connection(("127.0.0.1", exp.port), timeout=timeout) as plain:
        sock = (
            exp.context.wrap_socket(plain, server_hostname="127.0.0.1")
            if exp.context is not None
            else plain
        )
        # the server may close before reading a huge request: the answer still counts
        with contextlib.suppress(OSError):
            sock.sendall(raw)
        answer = b""
        try:
            while len(answer) < 65536 and (chunk := sock.recv(65536)):
                answer += chunk
        except (ConnectionResetError, ssl.SSLError):
            pass
        return answer


def status_of(answer: bytes) -> int | None:
    found = re.match(rb"HTTP/1\.[01] (\d{3}) ", answer)
    return int(found.group(1)) if found else None


def normal_scrape(exp: Exporter) -> int | None:
    auth = b"Authorization: " + GOOD_AUTH + b"\r\n" if exp.context is not None else b""
    return status_of(exchange(exp, b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"))


def run_case(case: Case, workdir: Path) -> gen.Outcome:
    exp = exporters()[case.server]
    before = len(exp.log_text())
    try:
        answer = exchange(exp, case.raw())
    except OSError as exc:
        answer = b""
        if isinstance(exc, TimeoutError):
            return gen.Outcome("wrong-accept", "no answer within 8 s | request held open")
    status = status_of(answer)
    time.sleep(0.01)  # the worker writes its log line after the answer
    after = normal_scrape(exp)
    log = exp.log_text()[before:]
    if exp.proc.poll() is not None:
        return gen.Outcome(
            "wrong-accept", f"exporter exited {exp.proc.returncode} | {log[-200:]!r}"
        )
    if "Traceback" in log:
        first = next((line for line in log.splitlines() if "Error" in line), log[:120])
        return gen.Outcome("traceback", f"exporter printed a traceback | {first[:160]}")
    if len(log.splitlines()) > 1:
        return gen.Outcome("wrong-accept", f"{len(log.splitlines())} log lines for one request")
    if after != 200:
        return gen.Outcome("wrong-accept", f"normal scrape answered {after} after this request")
    if status in (500, 503):
        return gen.Outcome("wrong-accept", f"answered {status}")
    if status == 200 and not case.authorized() and case.path.split(b"?")[0] == b"/metrics":
        return gen.Outcome("wrong-accept", "metrics without the right credentials")
    if status is not None and status < 400:
        return gen.OK
    return gen.Outcome("rejected", f"HTTP {status}" if status else "closed without a status line")
