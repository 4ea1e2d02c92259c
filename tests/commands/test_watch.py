"""`gputui watch --alerts`: JSON lines on stdout, --exec without a shell, --webhook without
redirects (against loopback servers only), bad input one line and exit 2, and a stdout
that is closed or full ends the command without a traceback."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputui.model.alert import alert_from_json

# Every demo GPU holds more than 1 % of its memory: memory_high fires on the first poll.
RULES = "[alerts.memory_high]\nthreshold_pct = 1\nfor_s = 0\n"


def _watch(
    tmp_path: Path, *args: str, stdout: Any = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    rules = tmp_path / "rules.toml"
    if not rules.exists():
        rules.write_text(RULES)
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    return subprocess.run(
        [sys.executable, "-m", "gputui", "watch", "--source", "demo", "--interval", "0.1",
         "--polls", "2", *args],
        env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120,
    )  # fmt: skip


def test_each_change_is_one_json_line_in_the_alert_shape(tmp_path: Path) -> None:
    done = _watch(tmp_path, "--alerts", str(tmp_path / "rules.toml"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    changes = [alert_from_json(json.loads(line)) for line in lines]
    assert [(c.rule, c.state, c.gpu) for c in changes] == [
        ("memory_high", "firing", "0"),
        ("memory_high", "firing", "1"),
    ]  # fired once each over two polls
    assert "Traceback" not in done.stderr


def test_a_bad_rule_is_one_line_naming_the_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "rules.toml").write_text("[alerts.memory_high]\nfor_s = 'soon'\n")
    done = _watch(tmp_path, "--alerts", str(tmp_path / "rules.toml"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0
    assert "rules.toml: alerts.memory_high.for_s: must be a number of seconds" in done.stderr


def test_watch_without_a_mode_or_with_a_bad_option_is_exit_2(tmp_path: Path) -> None:
    assert _watch(tmp_path).returncode == 2
    for args in (["--interval", "0"], ["--exec", ""], ["--exec", "no-such-command-here"],
                 ["--webhook", "ftp://127.0.0.1/x"], ["--exec", "'unclosed"]):  # fmt: skip
        done = _watch(tmp_path, "--alerts", str(tmp_path / "rules.toml"), *args)
        assert done.returncode == 2, args
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_exec_runs_without_a_shell_with_the_alert_in_env_and_stdin(tmp_path: Path) -> None:
    script = tmp_path / "hook.py"
    script.write_text(
        "import json, os, sys\n"
        "data = json.load(sys.stdin)\n"
        "with open(sys.argv[1], 'a') as f:\n"
        "    f.write(json.dumps({'argv': sys.argv[2:], 'stdin': data,"
        " 'rule': os.environ['GPUTUI_ALERT_RULE'], 'gpu': os.environ['GPUTUI_ALERT_GPU'],"
        " 'pid': os.environ['GPUTUI_ALERT_PID']}) + '\\n')\n"
    )
    out = tmp_path / "calls.jsonl"
    marker = tmp_path / "shell-ran"
    command = f"{sys.executable} {script} {out} ; touch {marker} '$(id)'"
    done = _watch(tmp_path, "--alerts", str(tmp_path / "rules.toml"), "--exec", command)
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(calls) == 2
    assert calls[0]["argv"] == [";", "touch", str(marker), "$(id)"]  # words, not shell syntax
    assert not marker.exists()
    assert calls[0]["rule"] == "memory_high" and calls[0]["gpu"] == "0" and calls[0]["pid"] == ""
    assert calls[0]["stdin"] == json.loads(done.stdout.splitlines()[0])


def test_exec_is_killed_after_its_timeout_and_the_watch_goes_on(tmp_path: Path) -> None:
    command = f"{sys.executable} -c 'import time; time.sleep(30)'"
    done = _watch(tmp_path, "--alerts", str(tmp_path / "rules.toml"), "--exec", command,
                  "--exec-timeout", "0.3")  # fmt: skip
    assert done.returncode == 0
    assert done.stderr.count("--exec: killed after 0.3 s") == 2
    assert len(done.stdout.splitlines()) == 2


class _Recorder(http.server.BaseHTTPRequestHandler):
    posts: list[tuple[str, bytes]] = []
    redirect_to: str | None = None

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).posts.append((self.path, body))
        if self.redirect_to is not None and self.path == "/hook":
            self.send_response(307)
            self.send_header("Location", self.redirect_to)
        else:
            self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Recorder]]]:
    handler = type("Handler", (_Recorder,), {"posts": [], "redirect_to": None})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_webhook_posts_each_change_as_json(
    tmp_path: Path, server: tuple[str, type[_Recorder]]
) -> None:
    base, handler = server
    done = _watch(tmp_path, "--alerts", str(tmp_path / "rules.toml"), "--webhook", f"{base}/hook")
    assert done.returncode == 0 and done.stderr.count("--webhook") == 0, done.stderr
    assert [json.loads(body)["gpu"] for _, body in handler.posts] == ["0", "1"]


def test_webhook_never_follows_a_redirect(
    tmp_path: Path, server: tuple[str, type[_Recorder]]
) -> None:
    base, handler = server
    handler.redirect_to = f"{base}/elsewhere"
    done = _watch(tmp_path, "--alerts", str(tmp_path / "rules.toml"), "--webhook", f"{base}/hook")
    assert done.returncode == 0
    assert [path for path, _ in handler.posts] == ["/hook", "/hook"]
    assert done.stderr.count("--webhook: answered 307 (a redirect, not followed)") == 2


def test_a_full_or_closed_stdout_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        done = _watch(tmp_path, "--alerts", str(tmp_path / "rules.toml"), stdout=full)
    assert done.returncode == 1
    assert "cannot write output: No space left on device" in done.stderr
    assert "Traceback" not in done.stderr
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader went away before the first line
    with os.fdopen(write_end, "w") as closed:
        done = _watch(tmp_path, "--alerts", str(tmp_path / "rules.toml"), stdout=closed)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr and "cannot write" not in done.stderr
