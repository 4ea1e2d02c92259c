"""`--listen HOST:PORT`, bounded at the boundary: every bad value is one UserError line.

`str.isdigit` is true for `²` and other digits `int` refuses, and a port of
thousands of digits meets Python's int-string limit; a host the IDNA codec
cannot encode (non-ASCII, a bidi override) makes `socket` raise TypeError or
UnicodeError, not OSError. So the port is ASCII digits, five at most, and
the host is an IP literal or a hostname of letters, digits, dots, hyphens and
underscores (RFC 1123 plus the underscore some internal names use), at most
253 characters. The value is quoted back shortened and made visible.
"""

from __future__ import annotations

import ipaddress
import re

from gputui.core.errors import UserError
from gputui.core.textsafe import visible

_PORT = re.compile(r"[0-9]{1,5}")
_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")
MAX_HOST = 253


def _quoted(text: str) -> str:
    shown = visible(text)
    return "'" + (shown if len(shown) <= 60 else shown[:59] + "…") + "'"


def _bad(text: str, why: str) -> UserError:
    return UserError(f"--listen {_quoted(text)}: expected HOST:PORT, e.g. 127.0.0.1:9835 ({why})")


def _host_ok(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    if len(host) > MAX_HOST:
        return False
    return all(_LABEL.fullmatch(label) for label in host.removesuffix(".").split("."))


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `[V6]:PORT` or `:PORT` (all interfaces); UserError naming --listen."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise _bad(text, "no port")
    if not _PORT.fullmatch(port_text) or int(port_text) > 65535:
        raise _bad(text, "the port must be a number from 0 to 65535")
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed:
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise _bad(text, "brackets hold an IPv6 address") from None
    if host and not _host_ok(host):
        raise _bad(text, "the host must be an IP address or an ASCII hostname")
    return host or "0.0.0.0", int(port_text)
