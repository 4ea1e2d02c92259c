"""Where `gputui watch --alerts` sends each alert change besides stdout: a command, a webhook.

`--exec CMD`: CMD is split as a shell would split words (shlex) and run directly, never
through a shell, so an alert's message (which quotes process command lines) cannot
become shell syntax. The alert is in the environment (GPUTUI_ALERT_RULE, ..._STATE,
..._SEVERITY, ..._MESSAGE, ..._GPU, ..._PID, ..._ACTION, ..._TIMESTAMP) and its JSON
on stdin; the command's stdout goes to gputui's stderr (stdout is the JSON lines), and
it is killed after `timeout_s`.

`--webhook URL`: the JSON is POSTed with a timeout; a redirect is never followed (the
alert goes where the user said, or nowhere). A failure of either is one line on stderr
and the watch goes on: the alert was printed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.model.alert import AlertChange

MAX_URL_CHARS = 2048


def exec_argv(command: str) -> list[str]:
    """`--exec`'s words, checked at start: one line and exit 2 for a command that cannot run."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UserError(f"--exec: cannot split the command into words ({exc})") from None
    if not argv:
        raise UserError("--exec: empty command")
    if shutil.which(argv[0]) is None:
        raise UserError(f"--exec: {visible(argv[0])}: command not found (or not executable)")
    return argv


def alert_environment(change: AlertChange) -> dict[str, str]:
    """The alert as GPUTUI_ALERT_* variables (empty text for a field it does not have)."""
    fields = change.to_json()
    return {
        f"GPUTUI_ALERT_{key.upper()}": "" if value is None else str(value)
        for key, value in fields.items()
    }


def run_exec(argv: list[str], change: AlertChange, timeout_s: float) -> str | None:
    """Run the command for one change; None when it ran and exited 0, else why not."""
    env = dict(os.environ) | alert_environment(change)
    try:
        done = subprocess.run(
            argv,
            input=json.dumps(change.to_json()).encode("utf-8"),
            env=env,
            stdout=sys.stderr.fileno() if _has_fd(sys.stderr) else subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"killed after {timeout_s:g} s"
    except OSError as exc:
        return visible(exc.strerror or str(exc))
    return None if done.returncode == 0 else f"exited with status {done.returncode}"


def _has_fd(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


def webhook_url(text: str) -> str:
    """`--webhook`'s URL, checked at start: http(s), a host, nothing that is not a URL."""
    if len(text) > MAX_URL_CHARS or not text.isprintable() or any(c.isspace() for c in text):
        raise UserError("--webhook: not a URL (too long, spaces or control characters)")
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise UserError(f"--webhook: not a URL ({visible(str(exc))})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise UserError("--webhook: expected an http:// or https:// URL with a host")
    return text


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Every 3xx answer stays an error: the alert is never sent somewhere else."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def post_webhook(url: str, change: AlertChange, timeout_s: float) -> str | None:
    """POST one change's JSON; None when the server answered 2xx, else why not."""
    opener = urllib.request.build_opener(_NoRedirect())
    request = urllib.request.Request(
        url,
        data=json.dumps(change.to_json()).encode("utf-8"),
        headers={"Content-Type": "application/json", "User-Agent": "gputui-watch"},
        method="POST",
    )
    try:
        with opener.open(request, timeout=timeout_s) as response:
            response.read(65536)
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        if 300 <= exc.code < 400:
            return f"answered {exc.code} (a redirect, not followed)"
        return f"answered {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return visible(str(reason))
    return None if 200 <= status < 300 else f"answered {status}"
