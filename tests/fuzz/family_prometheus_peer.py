"""Fuzz family "prometheus-peer": a hostile Prometheus, at the level of HTTP and of size.

Where family_prometheus mutates what one answer says, this one mutates how the
peer behaves: it redirects (same origin, another origin, loops, chains, bad
Locations), drips or delays its answers against `--deadline`, lies about
sizes (Content-Length over or under the body, absurd or repeated, a
compressed body that was not asked for, a gzip bomb), sends more series than
the bounds, or an envelope the streaming reader must get right (keys in any
order, whitespace, a repeated key, trailing bytes, a huge `data` of the wrong
type). `gputui snapshot --prometheus URL [--json] [--deadline S]` runs in
process against two fake servers on 127.0.0.1 (the peer and "elsewhere",
the other origin), started once per worker.

Wrong accepts: a request (and so credentials) reaching the other origin; a
planted fault read as a fleet; a valid variant not read as sent; a command
that ran past its deadline by more than a margin; more than one line on
stderr, or a control character on either stream.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import family_prometheus as base
import prometheus_fake as fake
from generators import OK, Outcome

FAMILY = "prometheus-peer"
DEADLINE_MARGIN_S = 3.0  # the command's own work after its last query, on a loaded box
SMALL_BOUND = 400  # the bound on series per answer for most bound cases (the real one: rare)
_SPACES_MIB = gzip.compress(b" " * (1 << 20))  # a gzip member of 1 MiB of spaces


@dataclass
class Case:
    gpus: list[fake.Gpu]
    json_out: bool
    mutation: str = "none"
    planted: str = ""  # "reject": must be refused; "": must be read as sent, or one line
    kind: str = ""  # the query whose answer is replaced ("" for every query)
    reply: fake.Reply | None = None
    redirect: str = ""  # "same", "other", "loop", "chain", "bad"
    location: str = ""  # for "bad"
    deadline: float | None = None  # --deadline
    delay_s: float = 0.0  # every answer this late
    bound: int | None = None  # MAX_SERIES_PER_ANSWER for this case
    exact: bool = field(default=True)  # a valid case: every value must come out as sent


def _kinds(case: Case) -> list[str]:
    return ["check", "fresh", "up", "targets", "labelled", "metric:gputui_gpu_up"]


def _body(case: Case, kind: str) -> bytes:
    return json.dumps(fake.fleet_answer(kind, case.gpus)).encode()


def _redirects(rng: Random, case: Case) -> None:
    case.redirect = rng.choice(["same", "other", "loop", "chain", "bad"])
    case.planted = "" if case.redirect == "same" else "reject"
    if case.redirect == "bad":
        case.location = rng.choice(
            ["http://[::1", "http://a[b/x", "\x1b[2J", "http://h\u202e/", "ftp://x/", " ",
             "http://user:pw@127.0.0.1:1/", "//" + "a" * 70000, "http://127.0.0.1:99999/"]
        )  # fmt: skip
    case.mutation = f"redirect {case.redirect} {case.location!r}"[:120]


def _timing(rng: Random, case: Case) -> None:
    case.deadline = rng.choice([1.0, 1.5, 2.0, 3.0])
    choice = rng.randrange(3)
    if choice == 0:
        case.delay_s = rng.choice([0.2, 0.5, 1.2])
        case.mutation = f"every answer {case.delay_s} s late, --deadline {case.deadline:g}"
    else:
        case.kind = rng.choice(_kinds(case))
        body = _body(case, case.kind)
        case.reply = fake.Reply(body, drip_s=rng.choice([0.01, 0.05, 0.3]))
        case.mutation = (
            f"{case.kind} dripped ({case.reply.drip_s} s/byte), --deadline {case.deadline:g}"
        )
    case.exact = False  # read whole, or one line naming a deadline


def _sizes(rng: Random, case: Case) -> None:
    case.kind = rng.choice(_kinds(case))
    body = _body(case, case.kind)
    choice = rng.randrange(7)
    if choice == 0:
        case.reply = fake.Reply(body[: rng.randrange(1, len(body))], length=len(body))
        case.mutation = "Content-Length over the body"
    elif choice == 1:
        case.reply = fake.Reply(body, length=rng.randrange(0, len(body)))
        case.mutation = "Content-Length under the body"
    elif choice == 2:
        value = rng.choice([b"99999999999999999999", b"-5", b"1" * 5000, b"0x20", b"12, 13"])
        case.reply = fake.Reply(body, length=None, headers=(b"Content-Length: " + value,))
        case.mutation = f"Content-Length {value[:20]!r}"
    elif choice == 3:
        name = rng.choice(["gzip", "deflate", "br", "x-gzip"])
        packed = gzip.compress(body) if "gzip" in name else zlib.compress(body)
        case.reply = fake.Reply(packed, headers=(b"Content-Encoding: " + name.encode(),))
        case.mutation = f"a body in {name}, not asked for"
    elif choice == 4:
        # gzip members concatenated inflate as one: 1 MiB compressed once, not 256 MiB
        bomb = gzip.compress(b"[" * (1 << 20)) + _SPACES_MIB * rng.choice([64, 256])
        case.reply = fake.Reply(bomb, headers=(b"Content-Encoding: gzip",))
        case.mutation = f"a gzip bomb of {len(bomb)} bytes"
    elif choice == 5:
        chunks = rng.choice([b"zz\r\nab\r\n0\r\n\r\n", b"ffffffffffffffff\r\n", b"5\r\nab"])
        case.reply = fake.Reply(chunks, length=None, headers=(b"Transfer-Encoding: chunked",))
        case.mutation = f"a broken chunked body {chunks[:20]!r}"
    else:
        case.reply = fake.Reply(body, length=None, headers=(
            b"Content-Type: application/json", b"Content-Length: %d" % len(body),
            b"Content-Length: %d" % (len(body) + 7),
        ))  # fmt: skip
        case.mutation = "two Content-Lengths that differ"
    case.planted = "reject"


def _series_items(n: int, rng: Random) -> list[dict[str, Any]]:
    host = rng.choice(["h", "node-a"])
    return [{"metric": {"Hostname": host, "gpu": str(i % 8), "pid": str(i)},
             "value": [1000.0, "1"]} for i in range(n)]  # fmt: skip


def _many(rng: Random, case: Case) -> None:
    case.kind = rng.choice(["fresh", "up", "labelled", "metric:gputui_gpu_up"])
    real = rng.random() < 0.03
    case.bound = None if real else SMALL_BOUND
    limit = 200_000 if real else SMALL_BOUND
    n = limit + rng.choice([1, 2, 100, limit])
    if real:  # the real bound, in the smallest items the API sends
        item = b'{"metric":{},"value":[1,"1"]}'
        body = (
            b'{"status":"success","data":{"resultType":"vector","result":['
            + b",".join([item] * n)
            + b"]}}"
        )
    else:
        data = {"resultType": "vector", "result": _series_items(n, rng)}
        body = json.dumps({"status": "success", "data": data}).encode()
    case.reply = fake.Reply(body)
    case.planted = "reject"
    case.mutation = f"{case.kind}: {n:,} series (the bound {limit:,})"


def _envelope(rng: Random, case: Case) -> None:
    """The streaming reader's ground: valid variants must read as sent, broken ones refused."""
    case.kind = rng.choice(["fresh", "up", "metric:gputui_gpu_up", "check"])
    payload = fake.fleet_answer(case.kind, case.gpus)
    data = payload["data"]
    choice = rng.randrange(10)
    valid = True
    if choice == 0:
        text = json.dumps({"data": {"result": data["result"], "resultType": "vector"},
                           "status": "success"})  # fmt: skip
        name = "keys in reverse order"
    elif choice == 1:
        text = json.dumps(payload, indent=rng.choice([1, 4, "\t"]), separators=(" , ", " : "))
        name = "whitespace everywhere"
    elif choice == 2:
        text = json.dumps(payload).replace('"result": [', '"result": [], "result": [', 1)
        name = "a repeated result key (the last counts)"
    elif choice == 3:
        text = json.dumps({**payload, "warnings": ["w"] * 3, "infos": ["i"]})
        name = "warnings and infos"
    elif choice == 4:
        text, valid = json.dumps(payload) + rng.choice(["x", "{}", "]", "\x00"]), False
        name = "bytes after the answer"
    elif choice == 5:
        text, valid = '{"status": "success", "data": [' + "1," * 200_000 + "1]}", False
        name = "data a huge list"
    elif choice == 6:
        text = json.dumps(payload).replace('"result": [', '"result": [1, ', 1)
        valid, name = False, "a number among the series"
    elif choice == 7:
        text, valid = json.dumps(payload).replace("[", "[,", 1), False
        name = "a comma opening a list"
    elif choice == 8:
        text = json.dumps({"status": "success", "data": {"resultType": "vector", "result": {}}})
        valid, name = False, "result an object"
    else:
        text = json.dumps(payload)
        cut = text.rfind("]")
        text, valid = text[:cut] + "," + text[cut:], False
        name = "a trailing comma in result"
    case.reply = fake.Reply(text.encode())
    case.planted = "" if valid else "reject"
    case.exact = valid
    case.mutation = f"{case.kind}: {name}"


def make_case(rng: Random) -> Case:
    case = Case(base.fleet(rng), json_out=rng.random() < 0.7)
    choice = rng.random()
    if choice < 0.08:
        pass  # a polite peer: every value read as sent
    elif choice < 0.3:
        _redirects(rng, case)
    elif choice < 0.45:
        _timing(rng, case)
    elif choice < 0.65:
        _sizes(rng, case)
    elif choice < 0.8:
        _many(rng, case)
    else:
        _envelope(rng, case)
    return case


def case_text(case: Case) -> bytes:
    fleet_text = json.dumps(
        [{"host": g.host, "gpu": g.index, "values": g.values} for g in case.gpus]
    )
    lines = [
        f"# mutated: {case.mutation}; planted: {case.planted or 'no'}; query: {case.kind or 'all'}",
        f"# deadline {case.deadline}; delay {case.delay_s}; bound {case.bound}; json {case.json_out}",
        f"# fleet: {fleet_text}",
    ]
    head, body = case.reply.wire() if case.reply is not None else (b"", b"")
    return "\n".join(lines).encode("utf-8", "backslashreplace") + b"\n" + head + body[:4096]


# --- running -------------------------------------------------------------------------------

_SERVERS: tuple[fake.FakePrometheus, fake.FakePrometheus] | None = None


def servers() -> tuple[fake.FakePrometheus, fake.FakePrometheus]:
    """(the peer, elsewhere): started in the worker itself (threads do not survive fork)."""
    global _SERVERS
    if _SERVERS is None:
        _SERVERS = (fake.FakePrometheus(), fake.FakePrometheus())
    return _SERVERS


def _responder(case: Case, peer: str, elsewhere: str) -> fake.Responder:
    hops = iter(range(10**6))

    def respond(path: str, params: dict[str, str]) -> fake.Reply:
        from urllib.parse import urlencode

        kind = fake.kind_of(path, params)
        if case.redirect and not path.startswith("/moved"):
            query = urlencode(params)
            to = {
                "same": f"/moved{path}?{query}",
                "other": f"{elsewhere}{path}?{query}",
                "loop": f"{path}?{query}",
                "chain": f"/hop{next(hops)}{path}",
                "bad": case.location,
            }[case.redirect]
            return fake.Reply(b"", status=b"HTTP/1.1 302 Found",
                              headers=(b"Location: " + to.encode("utf-8", "replace"),))  # fmt: skip
        if path.startswith("/moved"):
            kind = fake.kind_of(path.removeprefix("/moved"), params)
        if case.reply is not None and kind == case.kind:
            return case.reply
        answer = fake.json_reply(fake.fleet_answer(kind, case.gpus))
        return fake.Reply(answer.body, delay_s=case.delay_s) if case.delay_s else answer

    return respond


def run_case(case: Case, workdir: Path) -> Outcome:
    from gputui.cli import main
    from gputui.sources.prometheus import api

    peer, elsewhere = servers()
    peer.serve(_responder(case, peer.url, elsewhere.url))
    elsewhere.serve(lambda path, params: fake.fleet_reply(path, params))
    url = peer.url.replace("http://", "http://viewer:s3cret@")
    argv = ["snapshot", "--prometheus", url, *(["--json"] if case.json_out else [])]
    if case.deadline is not None:
        argv += ["--deadline", f"{case.deadline:g}"]
    out, err = io.StringIO(), io.StringIO()
    bound = api.MAX_SERIES_PER_ANSWER
    started = time.monotonic()
    try:
        if case.bound is not None:
            api.MAX_SERIES_PER_ANSWER = case.bound
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        api.MAX_SERIES_PER_ANSWER = bound
    elapsed = time.monotonic() - started
    stdout, stderr = out.getvalue(), err.getvalue()
    if elsewhere.seen:
        return Outcome("wrong-accept", f"a request reached the other origin | {case.mutation}")
    if "s3cret" in stdout + stderr:
        return Outcome("wrong-accept", "the password printed")
    for stream, text in (("stdout", stdout), ("stderr", stderr)):
        if base._UNSAFE.search(text):
            return Outcome("wrong-accept", f"control character on {stream} | {case.mutation}")
    limit = (case.deadline or api.DEFAULT_DEADLINE_S) + DEADLINE_MARGIN_S
    if elapsed > limit:
        return Outcome("wrong-accept", f"ran {elapsed:.1f} s, past its deadline | {case.mutation}")
    lines = stderr.splitlines()
    if code in (1, 2) and not stdout:
        if len(lines) != 1:
            return Outcome("wrong-accept", f"exit {code} without one line | {stderr[:120]!r}")
        if "series (the bound" in case.mutation and "--match" not in lines[0]:
            return Outcome("wrong-accept", f"a bound's line without --match | {lines[0][:120]}")
        return Outcome("rejected", lines[0])
    if code != 0 or lines:
        return Outcome("wrong-accept", f"exit {code} with stderr | {stderr[:120]!r}")
    if case.planted == "reject":
        return Outcome("wrong-accept", f"accepted a planted fault | {case.mutation}")
    if case.json_out and case.exact:
        devices = base._devices(stdout)
        scales = {f: s for f, s in base.SAMPLE_METRICS.values()}
        for g in case.gpus:
            for metric, sent in g.values.items():
                if metric not in base.SAMPLE_METRICS:
                    continue
                name = base._field(metric)
                got = devices.get((g.host, g.index), {}).get(name)
                want = base._shown(float(sent), name, scales[name])
                if got is None or abs(got - want) > 1e-6 * max(1.0, abs(got)):
                    return Outcome(
                        "wrong-accept", f"a reading shown wrong | {name}: {sent} -> {got}"
                    )
    return OK
