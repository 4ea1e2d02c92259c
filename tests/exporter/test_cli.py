"""`gputui exporter` as a user runs it: bad arguments, the non-loopback warning, TLS + basic auth."""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from gputui.exporter.server import parse_listen


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", "exporter", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--listen", "nowhere"], "--listen 'nowhere': expected HOST:PORT"),
        (["--listen", "127.0.0.1:99999"], "expected HOST:PORT"),
        (["--listen", "127.0.0.1:\u00b2"], "--listen '127.0.0.1:\u00b2': expected HOST:PORT"),
        (["--listen", "127.0.0.1:" + "9" * 4301], "expected HOST:PORT"),
        (["--listen", "h\u00e9te:9835"], "the host must be an IP address or an ASCII hostname"),
        (["--listen", "a\u202eb:9835"], "the host must be an IP address or an ASCII hostname"),
        (["--listen", "[nohost]:9835"], "brackets hold an IPv6 address"),
        (["--interval", "0"], "--interval: 0 s is out of range"),
        (["--tls-cert", "x.pem"], "--tls-cert and --tls-key go together"),
        (["--basic-auth-file", "users"], "needs --tls-cert and --tls-key"),
        (["--scenario", "missing.toml"], "--scenario: missing.toml: scenario file not found"),
        (["--models", "missing.toml"], "--models: missing.toml: no such file"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], needle: str) -> None:
    result = run_cli("--source", "demo", *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_default_listen_is_loopback() -> None:
    from gputui.cli import build_parser

    args = build_parser().parse_args(["exporter"])
    assert parse_listen(args.listen) == ("127.0.0.1", 9835)


def test_all_interfaces_only_when_asked_and_with_a_warning(
    start_exporter: type, scenario: Path
) -> None:
    exp = start_exporter(["--source", "demo", "--scenario", str(scenario), "--listen", "0.0.0.0:0"])
    warnings = [line for line in exp.lines if "warning" in line]
    assert len(warnings) == 1 and "0.0.0.0" in warnings[0] and "no TLS" in warnings[0]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_and_basic_auth(start_exporter: type, scenario: Path, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    users = tmp_path / "users"
    users.write_text("prometheus:s3cret\n")
    users.chmod(0o644)
    loose = run_cli("--source", "demo", "--tls-cert", str(cert), "--tls-key", str(key),
                    "--basic-auth-file", str(users))  # fmt: skip
    assert loose.returncode == 2 and "chmod 600" in loose.stderr
    users.chmod(0o600)
    exp = start_exporter(
        ["--source", "demo", "--scenario", str(scenario), "--listen", "127.0.0.1:0",
         "--tls-cert", str(cert), "--tls-key", str(key), "--basic-auth-file", str(users)]
    )  # fmt: skip
    assert exp.url.startswith("https://127.0.0.1:")
    ctx = ssl.create_default_context(cafile=str(cert))

    def get(auth: str | None) -> int:
        req = urllib.request.Request(exp.url)
        if auth is not None:
            req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return exc.code

    assert get(None) == 401
    assert get("prometheus:wrong") == 401
    assert get("nobody:s3cret") == 401
    assert get("prometheus:s3cret") == 200
    with pytest.raises(OSError):  # plain HTTP to the TLS port gets nowhere...
        urllib.request.urlopen(exp.url.replace("https", "http"), timeout=5).read()
    assert get("prometheus:s3cret") == 200  # ...and does not take the endpoint down


@pytest.mark.parametrize(
    "text", ["127.0.0.1:\u00b2", "\u202e:80", "x" * 300 + ":80", ":" + "1" * 4301]
)
def test_listen_quotes_a_bad_value_short_and_visible(text: str) -> None:
    from gputui.core.errors import UserError

    with pytest.raises(UserError) as caught:
        parse_listen(text)
    message = str(caught.value)
    assert "\n" not in message and "\u202e" not in message and len(message) < 200


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_files_are_checked_as_pem_and_an_encrypted_key_is_refused(tmp_path: Path) -> None:
    """OpenSSL would ask for an encrypted key's pass phrase on the terminal (a hang for a
    service); a file of the wrong kind is named, not reported as `PEM lib (_ssl.c:NNNN)`."""
    cert, key, locked = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "locked.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-subj", "/CN=127.0.0.1", "-days", "1", "-passout", "pass:secret",
         "-keyout", str(locked), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    subprocess.run(
        ["openssl", "ec", "-in", str(locked), "-passin", "pass:secret", "-out", str(key)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    cases = [
        (["--tls-cert", str(cert), "--tls-key", str(locked)], "--tls-key: ", "encrypted"),
        (["--tls-cert", str(key), "--tls-key", str(key)], "--tls-cert: ", "no PEM certificate"),
        (["--tls-cert", str(cert), "--tls-key", str(cert)], "--tls-key: ", "no PEM private key"),
        (["--tls-cert", str(cert), "--tls-key", str(key), "--tls-client-ca", str(key)],
         "--tls-client-ca: ", "no PEM certificate"),
    ]  # fmt: skip
    for args, option, reason in cases:
        result = subprocess.run(
            [sys.executable, "-m", "gputui", "exporter", "--source", "demo", "--listen",
             "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        lines = result.stderr.splitlines()
        assert result.returncode == 2, (args, result.stderr)
        assert len(lines) == 1 and option in lines[0] and reason in lines[0], (args, lines)
