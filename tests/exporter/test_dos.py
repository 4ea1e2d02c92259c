"""The exporter under hostile clients: idle, half a ClientHello, slowloris, floods, bursts.

Scrapes must go on while such clients hold connections, with TLS and without;
the server must cut them off by its own deadlines and keep its threads and
memory bounded however many connect; a burst of scrapes must all be answered.
The exporter runs as the user starts it (conftest's `start_exporter`), except
for the thread and memory counts, which need the server in this process.
"""

from __future__ import annotations

import base64
import select
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

# A TLS record header announcing 512 bytes, the ClientHello's first bytes, then nothing.
HALF_CLIENT_HELLO = bytes.fromhex("1603010200010001fc0303") + bytes(range(16))
HALF_REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # no blank line: never ends
REQUEST_TIMEOUT_S = 10.0  # the exporter's documented limit from connect to the end of the head
SCHEMES = ["http", "https"]


@dataclass(frozen=True)
class Certs:
    ca: Path
    cert: Path
    key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA."""
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-days", "2", "-subj", "/CN=gputui test CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"))  # fmt: skip
    for name, ext in (
        ("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
        ("client", "extendedKeyUsage=clientAuth\n"),
    ):
        (d / f"{name}.ext").write_text(
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
            "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n" + ext
        )
        _openssl("req", *ec, "-subj", f"/CN={name}", "-keyout", str(d / f"{name}.key"),
                 "-out", str(d / f"{name}.csr"))  # fmt: skip
        _openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.pem"),
                 "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "2",
                 "-extfile", str(d / f"{name}.ext"), "-out", str(d / f"{name}.pem"))  # fmt: skip
    return Certs(
        d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem", d / "client.key"
    )


def client_context(certs: Certs, *, with_cert: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    if with_cert:
        ctx.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    return ctx


def exporter_args(scheme: str, certs: Certs, scenario: Path, *extra: str) -> list[str]:
    args = ["--source", "demo", "--scenario", str(scenario), "--listen", "127.0.0.1:0", *extra]
    if scheme == "https":
        args += ["--tls-cert", str(certs.cert), "--tls-key", str(certs.key)]
    return args


def scrape(
    url: str, ctx: ssl.SSLContext | None, *, auth: str | None = None, timeout: float = 5.0
) -> int:
    req = urllib.request.Request(url)
    if auth is not None:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as resp:
            resp.read()
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def hold(address: str, first_bytes: bytes) -> socket.socket:
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    if first_bytes:
        sock.sendall(first_bytes)
    return sock


def closed_by_server(sock: socket.socket, until: float) -> bool:
    """Whether the server closes `sock` before the monotonic time `until` (reading what it sends)."""
    while (left := until - time.monotonic()) > 0:
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            return False
        try:
            if not sock.recv(4096):
                return True
        except OSError:  # reset: closed too
            return True
    return False


def slowloris(address: str, ctx: ssl.SSLContext | None, result: dict[str, object]) -> None:
    """Send a request head a byte every 0.5 s, forever; record when (if) the server cuts it off."""
    started = time.monotonic()
    host, port = address.rsplit(":", 1)
    try:
        sock: socket.socket = socket.create_connection((host, int(port)), timeout=5)
        if ctx is not None:
            sock = ctx.wrap_socket(sock, server_hostname=host)
        head = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 100
        for i in range(60):  # 30 s at most
            sock.send(head[i : i + 1] if i < len(head) else b"a")
            if closed_by_server(sock, time.monotonic() + 0.5):
                break
        else:
            return
        result["cut_after_s"] = time.monotonic() - started
    except OSError:
        result["cut_after_s"] = time.monotonic() - started


@pytest.mark.slow  # waits out the exporter's own request deadline (REQUEST_TIMEOUT_S)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_idle_half_hello_and_slowloris_do_not_stop_scrapes_and_are_cut_off(
    start_exporter: type, scenario: Path, certs: Certs, scheme: str
) -> None:
    exp = start_exporter(exporter_args(scheme, certs, scenario))
    ctx = client_context(certs) if scheme == "https" else None
    assert scrape(exp.url, ctx) == 200
    opened = time.monotonic()
    idle = hold(exp.address, b"")
    half = hold(exp.address, HALF_CLIENT_HELLO if scheme == "https" else HALF_REQUEST)
    slow: dict[str, object] = {}
    trickle = threading.Thread(target=slowloris, args=(exp.address, ctx, slow), daemon=True)
    trickle.start()
    try:
        time.sleep(0.3)
        statuses = [scrape(exp.url, ctx) for _ in range(50)]
        assert statuses == [200] * 50
        until = opened + REQUEST_TIMEOUT_S + 5
        assert closed_by_server(idle, until), "an idle connection was never closed"
        assert closed_by_server(half, until), "half a request was never closed"
        trickle.join(timeout=max(0.0, until - time.monotonic()) + 1)
        cut = slow.get("cut_after_s")
        assert isinstance(cut, float) and cut <= REQUEST_TIMEOUT_S + 5, slow
    finally:
        idle.close()
        half.close()


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_500_half_open_connections_do_not_grow_threads_or_memory(certs: Certs, scheme: str) -> None:
    from prometheus_client import CollectorRegistry, Gauge

    from gputui.exporter.server import MetricsServer, TlsFiles

    registry = CollectorRegistry(auto_describe=False)
    Gauge("gputui_test_value", "a value to scrape", registry=registry).set(1)
    tls = TlsFiles(certs.cert, certs.key) if scheme == "https" else None
    server = MetricsServer(registry, "127.0.0.1", 0, tls=tls)
    server.start()
    ctx = client_context(certs) if scheme == "https" else None
    address = f"127.0.0.1:{server.port}"
    held: list[socket.socket] = []
    try:
        assert scrape(server.url, ctx) == 200  # the workers are up; this is the baseline
        threads_before, rss_before = threading.active_count(), _rss_kib()
        peak = threads_before
        first = HALF_CLIENT_HELLO if scheme == "https" else HALF_REQUEST
        for i in range(500):
            held.append(hold(address, first))
            if i % 25 == 0:
                peak = max(peak, threading.active_count())
        time.sleep(0.5)
        peak = max(peak, threading.active_count())
        # While they are held, a scrape still gets through (the oldest silent ones make room).
        assert scrape(server.url, ctx, timeout=5) == 200
        peak = max(peak, threading.active_count())
        grown_mib = (_rss_kib() - rss_before) / 1024
        # Slack for short-lived threads of other in-process servers in the session (the
        # fleet fixture's pages, scraped by its Prometheus); one thread per connection is +500.
        assert peak <= threads_before + 16, f"threads grew from {threads_before} to {peak}"
        assert grown_mib < 32, f"RSS grew by {grown_mib:.1f} MiB"
        assert server.connections.held <= server.connections.limits.max_connections
    finally:
        for sock in held:
            sock.close()
        server.shutdown()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_200_parallel_scrapes_are_all_answered(
    start_exporter: type, scenario: Path, certs: Certs, scheme: str
) -> None:
    exp = start_exporter(exporter_args(scheme, certs, scenario))
    ctx = client_context(certs) if scheme == "https" else None
    assert scrape(exp.url, ctx) == 200
    gate = threading.Barrier(200)

    def one(_: int) -> int:
        gate.wait(timeout=30)
        try:
            return scrape(exp.url, ctx, timeout=10)
        except OSError:
            return 0

    with ThreadPoolExecutor(max_workers=200) as pool:
        statuses = list(pool.map(one, range(200)))
    assert statuses.count(200) == 200, f"{statuses.count(200)} of 200 answered"


def accept_queue_length(port: int) -> int | None:
    """Connections waiting in the accept queue of the IPv4 listener on `port` (Linux)."""
    deadline, length = time.monotonic() + 3, None
    while time.monotonic() < deadline:  # the last handshakes may still be completing
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1] == f"0100007F:{port:04X}" and fields[3] == "0A":  # LISTEN
                length = int(fields[4].split(":")[1], 16)
        if length == 200:
            break
        time.sleep(0.1)
    return length


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp")
@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_burst_of_200_connections_waits_in_the_backlog_and_is_answered(
    certs: Certs, scheme: str
) -> None:
    """Deterministic form of the burst: the server listens but does not accept yet.

    All 200 connections must sit in the listen backlog's accept queue (Linux
    shows its length in /proc/net/tcp); with a short backlog the rest are left
    half-open, retried by the client with backoff. Once the server runs, every
    one of them is answered.
    """
    from prometheus_client import CollectorRegistry, Gauge

    from gputui.exporter.server import MetricsServer, TlsFiles

    registry = CollectorRegistry(auto_describe=False)
    Gauge("gputui_test_value", "a value to scrape", registry=registry).set(1)
    tls = TlsFiles(certs.cert, certs.key) if scheme == "https" else None
    server = MetricsServer(registry, "127.0.0.1", 0, tls=tls)
    ctx = client_context(certs) if scheme == "https" else None
    waiting: list[socket.socket] = []
    started = False
    try:
        for i in range(200):
            try:
                waiting.append(socket.create_connection(("127.0.0.1", server.port), timeout=2))
            except TimeoutError:
                pytest.fail(f"connection {i + 1} of 200 did not fit in the listen backlog")
        queued = accept_queue_length(server.port)
        assert queued == 200, f"the listen backlog holds {queued} of 200 connections"
        server.start()
        started = True
        answered, until = 0, time.monotonic() + 30
        for sock in waiting:
            sock.settimeout(max(0.1, until - time.monotonic()))
            conn = ctx.wrap_socket(sock, server_hostname="127.0.0.1") if ctx else sock
            conn.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            reply = b""
            while chunk := conn.recv(65536):
                reply += chunk
                conn.settimeout(max(0.1, until - time.monotonic()))
            answered += reply.startswith(b"HTTP/1.0 200")
            conn.close()
        assert answered == 200, f"{answered} of 200 answered"
    finally:
        for sock in waiting:
            sock.close()
        if not started:
            server.start()  # so that shutdown, which waits for the serving loop, returns
        server.shutdown()


def test_basic_auth_and_client_ca_hold_while_idle_clients_wait(
    start_exporter: type, scenario: Path, certs: Certs, tmp_path: Path
) -> None:
    users = tmp_path / "users"
    users.write_text("prometheus:s3cret\n")
    users.chmod(0o600)
    exp = start_exporter(
        exporter_args("https", certs, scenario, "--tls-client-ca", str(certs.ca),
                      "--basic-auth-file", str(users))
    )  # fmt: skip
    mutual = client_context(certs, with_cert=True)
    assert scrape(exp.url, mutual, auth="prometheus:s3cret") == 200
    idle = hold(exp.address, b"")
    half = hold(exp.address, HALF_CLIENT_HELLO)
    try:
        with pytest.raises(OSError):  # no client certificate: refused in the handshake
            scrape(exp.url, client_context(certs), auth="prometheus:s3cret")
        assert scrape(exp.url, mutual) == 401
        assert scrape(exp.url, mutual, auth="prometheus:wrong") == 401
        assert scrape(exp.url, mutual, auth="nobody:s3cret") == 401
        assert scrape(exp.url, mutual, auth="prometheus:s3cret") == 200
    finally:
        idle.close()
        half.close()
