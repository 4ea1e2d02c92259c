"""The one parser of a Prometheus server's URL (`--prometheus`) and of where it redirects to.

Every request the cluster reader makes goes to an Endpoint parsed here, and a
redirect is followed only to the same origin (http.py), compared as parsed
here: one place decides what a host, a port and an origin are. urllib's
`urlsplit` raises ValueError for `http://[::1` and takes a host with spaces,
control characters or a `[` inside; http.client then fails in its own ways
(UnicodeEncodeError for a non-ASCII host, InvalidURL). Here each of those is
a `BadUrl` naming what is wrong, which the client turns into one line.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from dataclasses import dataclass

MAX_URL_CHARS = 2048  # a server's base URL; longer is not one
DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?\.?$")  # "a.example."
_PATH_CHARS = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=:@/%-]*$")  # RFC 3986 pchar and "/"


class BadUrl(ValueError):
    """Not a URL gputui can send a request to; `reason` says why, without the URL."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Endpoint:
    scheme: str  # "http" or "https"
    host: str  # ASCII (IDNA-encoded), lower case; an IPv6 address without brackets
    port: int | None  # as given; None for the scheme's default
    path: str  # the base path, without a trailing slash ("" or "/prometheus")
    username: str | None = None  # percent-decoded
    password: str | None = None

    @property
    def origin(self) -> tuple[str, str, int]:
        """(scheme, host, port), the default port filled in: what a redirect must keep."""
        return (self.scheme, self.host, self.port or DEFAULT_PORTS[self.scheme])

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"

    @property
    def base(self) -> str:
        """The URL without credentials: what requests go to and what messages name."""
        return f"{self.scheme}://{self.netloc}{self.path}"

    def origin_text(self) -> str:
        scheme, _, port = self.origin
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{port}"


def _host(netloc_host: str | None, raw_netloc: str) -> str:
    hostinfo = raw_netloc.rpartition("@")[2]
    if hostinfo.startswith("["):
        literal = hostinfo[1:].partition("]")[0]
        try:
            address = ipaddress.IPv6Address(literal.split("%", 1)[0])
        except ValueError:
            raise BadUrl(f"[{literal}] is not an IPv6 address") from None
        if "%" in literal:
            raise BadUrl("an IPv6 zone (%...) is not supported")
        return str(address)
    if not netloc_host:
        raise BadUrl("no host")
    if "[" in hostinfo or "]" in hostinfo:
        raise BadUrl("a host with [ or ] that is not an [IPv6] address")
    try:
        ascii_host = netloc_host.encode("idna").decode("ascii")
    except UnicodeError:
        raise BadUrl("a host name that cannot be encoded (IDNA)") from None
    if not _HOST_NAME.match(ascii_host) or ".." in ascii_host:
        raise BadUrl("a host name may hold letters, digits, '.', '-' and '_'")
    return ascii_host.lower()


def parse(text: str) -> Endpoint:
    """The server URL `text` as an Endpoint, or BadUrl."""
    if not text.strip():
        raise BadUrl("empty: expected an http:// or https:// URL, e.g. http://prometheus:9090")
    if len(text) > MAX_URL_CHARS:
        raise BadUrl(f"over {MAX_URL_CHARS} characters")
    if not text.isprintable() or any(c.isspace() for c in text):
        raise BadUrl("spaces or control characters in a URL")
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError as exc:  # "Invalid IPv6 URL" and friends
        raise BadUrl(f"not a URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.netloc:
        raise BadUrl("expected an http:// or https:// URL, e.g. http://prometheus:9090")
    if parts.query or parts.fragment or "?" in text or "#" in text:
        raise BadUrl("no query string or fragment, please")
    host = _host(parts.hostname, parts.netloc)
    try:
        port = parts.port
    except ValueError:
        raise BadUrl("bad port") from None
    if port == 0:
        raise BadUrl("bad port")
    if not _PATH_CHARS.match(parts.path):
        raise BadUrl("a path may hold only URL characters (percent-encode the rest)")
    username = password = None
    if parts.username is not None:
        username = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
    return Endpoint(scheme, host, port, parts.path.rstrip("/"), username, password)


def redirect(url: str, location: str) -> tuple[tuple[str, str, int], str]:
    """(origin, absolute URL) of a redirect's Location, relative to the URL it answered."""
    if not location or not location.isascii() or not location.isprintable():
        raise BadUrl("a Location that is not an ASCII URL")
    if any(c.isspace() for c in location) or len(location) > 16 * MAX_URL_CHARS:
        raise BadUrl("a Location with spaces, or too long")
    try:
        absolute = urllib.parse.urljoin(url, location)
        parts = urllib.parse.urlsplit(absolute)
    except ValueError as exc:
        raise BadUrl(f"not a URL ({exc})") from None
    if parts.username is not None or parts.password is not None:
        raise BadUrl("a Location that carries credentials")
    where = parse(f"{parts.scheme}://{parts.netloc}")
    return where.origin, urllib.parse.urlunsplit(parts._replace(fragment=""))
