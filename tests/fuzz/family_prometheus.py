"""Fuzz family "prometheus": answers of a fake Prometheus HTTP API to the cluster reader.

A case is a small fleet (prometheus_fake.Gpu) whose answers are those a real
Prometheus gives to the queries the reader sends (one per GPU metric, the
identity/freshness query, the labelled extras, `up`, /api/v1/targets), with
one query's answer mutated: its values, its types and arity, its nesting, its
bytes (truncation, non-UTF-8) or its HTTP (status line, headers,
Content-Length, a drip, a huge body). `gputui snapshot --prometheus URL
[--json]` or `gputui fit MODELS --prometheus URL` runs in process against a
fake server on 127.0.0.1, started once per worker process (the harness forks
its workers; the server starts at the first case a worker runs).

Planted mutations are known to be invalid: a shape the API never sends must
be refused (exit 2, one line), and a sample value that is not a finite
reading in range (`+Inf`, `NaN`, `1e999`, `-5` %) must come out as N/A
(`null` in the JSON): a confident number there is a wrong accept.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import prometheus_fake as fake
from generators import OK, Outcome

from gputui.sources.prometheus.series import GPU_UP, SAMPLE_METRICS

FAMILY = "prometheus"
MODELS = str(Path(__file__).resolve().parent / "prometheus_models.toml")
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
# Fields the reader keeps as floats (the rest it rounds): watts, and GPM's ratios as percent.
_FLOAT_FIELDS = {
    "power_w",
    "power_limit_w",
    "sm_active_pct",
    "sm_occupancy_pct",
    "tensor_active_pct",
    "dram_active_pct",
}
METRICS = tuple(SAMPLE_METRICS)
# What a real reading of each metric can be (in its unit); the generator draws valid values
# from here, and planted values from outside.
RANGES = {m: (0.0, 100.0) for m in METRICS}
RANGES.update(
    {
        "DCGM_FI_DEV_FB_USED": (0.0, 200_000.0),
        "DCGM_FI_DEV_FB_FREE": (0.0, 200_000.0),
        "DCGM_FI_DEV_FB_RESERVED": (0.0, 2_000.0),
        "DCGM_FI_DEV_GPU_TEMP": (20.0, 95.0),
        "DCGM_FI_DEV_POWER_USAGE": (10.0, 1_000.0),
        "DCGM_FI_DEV_SM_CLOCK": (200.0, 2_500.0),
        "DCGM_FI_DEV_MEM_CLOCK": (400.0, 3_000.0),
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": (0.0, 5e7),
        "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": (0.0, 5e7),
        "gputui_gpu_power_limit_watts": (100.0, 1_000.0),
        "gputui_gpu_memory_total_bytes": (8e9, 2e11),
        "gputui_gpu_performance_state": (0.0, 12.0),
        # GPM's ratios, on DCGM's 0-1 scale
        "DCGM_FI_PROF_SM_ACTIVE": (0.0, 1.0),
        "DCGM_FI_PROF_SM_OCCUPANCY": (0.0, 1.0),
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (0.0, 1.0),
        "DCGM_FI_PROF_DRAM_ACTIVE": (0.0, 1.0),
    }
)
INVALID_VALUES = ("+Inf", "-Inf", "NaN", "Inf", "1e999", "-1e999", "1e300", "-1e300", "1e16")
BELOW_RANGE = ("-5", "-0.5", "-1e9")
# Far past what any GPU reads (percentages default to 250 %): exabytes, megawatts, terahertz.
ABOVE_RANGE = {
    "DCGM_FI_DEV_FB_USED": "5e12",  # MiB
    "DCGM_FI_DEV_FB_FREE": "5e12",
    "DCGM_FI_DEV_FB_RESERVED": "5e12",
    "DCGM_FI_DEV_GPU_TEMP": "1000",
    "DCGM_FI_DEV_POWER_USAGE": "5e6",
    "DCGM_FI_DEV_SM_CLOCK": "5e6",
    "DCGM_FI_DEV_MEM_CLOCK": "5e6",
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": "1e12",  # KB/s
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": "1e12",
    "gputui_gpu_power_limit_watts": "5e6",
    "gputui_gpu_memory_total_bytes": "1e19",
    "gputui_gpu_performance_state": "99",
    "DCGM_FI_PROF_SM_ACTIVE": "2.5",
    "DCGM_FI_PROF_SM_OCCUPANCY": "2.5",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "2.5",
    "DCGM_FI_PROF_DRAM_ACTIVE": "2.5",
}
NOT_NUMBERS = ("", "lots", "0x10", "1_000", " 5", "5 ", "1e", "--1", "infinity", "\u0661")


@dataclass
class Case:
    gpus: list[fake.Gpu]
    command: str  # snapshot, snapshot-json, fit
    kind: str  # the query whose answer is mutated (prometheus_fake.kind_of), or "" for none
    reply: fake.Reply | None  # that answer
    mutation: str
    planted: str = ""  # "reject": must be refused; "na": the values below must be N/A
    na: list[tuple[str, int, str]] = field(default_factory=list)  # (host, gpu, sample field)
    expect: list[tuple[str, int, str, float]] = field(default_factory=list)  # valid values


# --- generating --------------------------------------------------------------------------


def _number(rng: Random, lo: float, hi: float) -> str:
    v = rng.uniform(lo, hi)
    form = rng.randrange(4)
    if form == 0:
        return str(int(v))
    if form == 1:
        return f"{v:.3f}"
    if form == 2:
        return f"{v:.6e}"
    return repr(v)


def fleet(rng: Random) -> list[fake.Gpu]:
    gpus = []
    hosts = [f"node-{c}" for c in "abcdefgh"[: rng.randint(1, 4)]]
    for host in hosts:
        for i in range(rng.randint(1, 4)):
            metrics = [m for m in METRICS if rng.random() < 0.8]
            values = {m: _number(rng, *RANGES[m]) for m in metrics}
            values[GPU_UP] = "1"
            gpus.append(
                fake.Gpu(
                    host,
                    i,
                    model=rng.choice(["NVIDIA H100 80GB HBM3", "NVIDIA A10"]),
                    values=values,
                )
            )
    return gpus


def _field(metric: str) -> str:
    return SAMPLE_METRICS[metric][0]


def _plant_values(rng: Random, case: Case) -> None:
    """Some GPUs' readings replaced by values that are not readings: they must show as N/A."""
    for gpu in rng.sample(case.gpus, rng.randint(1, len(case.gpus))):
        metrics = [m for m in gpu.values if m in SAMPLE_METRICS]
        if not metrics:
            continue
        metric = rng.choice(metrics)
        lo, hi = RANGES[metric]
        choice = rng.randrange(3)
        if choice == 0:
            value = rng.choice(INVALID_VALUES)
        elif choice == 1:
            value = rng.choice(BELOW_RANGE)
        else:
            value = ABOVE_RANGE.get(metric, "250")
        gpu.values[metric] = value
        case.na.append((gpu.host, gpu.index, _field(metric)))
    case.planted = "na"
    case.mutation = f"values not readings: {case.na}"


def _payload(case: Case, kind: str) -> dict[str, Any]:
    return copy.deepcopy(fake.fleet_answer(kind, case.gpus))


SHAPES = (
    ("data.result a dict", lambda d: d["data"].__setitem__("result", {"a": 1})),
    ("data.result a string", lambda d: d["data"].__setitem__("result", "x")),
    ("data.result null", lambda d: d["data"].__setitem__("result", None)),
    ("data a list", lambda d: d.__setitem__("data", [])),
    ("status missing", lambda d: d.pop("status")),
    ("status ok", lambda d: d.__setitem__("status", "ok")),
    ("resultType matrix", lambda d: d["data"].__setitem__("resultType", "matrix")),
    ("resultType scalar", lambda d: d["data"].__setitem__("resultType", "scalar")),
    ("resultType missing", lambda d: d["data"].pop("resultType")),
)
ITEM_SHAPES = (
    ("item a string", lambda r, i: r.__setitem__(i, "gpu")),
    ("item a list", lambda r, i: r.__setitem__(i, [1, "2"])),
    ("item null", lambda r, i: r.__setitem__(i, None)),
    ("value of 1", lambda r, i: r[i].__setitem__("value", r[i]["value"][:1])),
    ("value of 3", lambda r, i: r[i]["value"].append("3")),
    ("value empty", lambda r, i: r[i].__setitem__("value", [])),
    ("value a string", lambda r, i: r[i].__setitem__("value", "1")),
    ("value missing", lambda r, i: r[i].pop("value")),
    ("value swapped", lambda r, i: r[i].__setitem__("value", r[i]["value"][::-1])),
    ("value[0] a bool", lambda r, i: r[i]["value"].__setitem__(0, True)),
    ("value[0] null", lambda r, i: r[i]["value"].__setitem__(0, None)),
    ("value[1] a number", lambda r, i: r[i]["value"].__setitem__(1, 5)),
    ("value[1] null", lambda r, i: r[i]["value"].__setitem__(1, None)),
    ("value[1] a list", lambda r, i: r[i]["value"].__setitem__(1, ["5"])),
    ("metric a string", lambda r, i: r[i].__setitem__("metric", "gpu")),
    ("metric a list", lambda r, i: r[i].__setitem__("metric", ["gpu", "0"])),
    ("metric null", lambda r, i: r[i].__setitem__("metric", None)),
    ("label a number", lambda r, i: r[i]["metric"].__setitem__("gpu", 0)),
    ("label null", lambda r, i: r[i]["metric"].__setitem__("Hostname", None)),
    ("label a dict", lambda r, i: r[i]["metric"].__setitem__("instance", {"a": "b"})),
)
TARGET_SHAPES = (
    ("activeTargets a dict", lambda d: d["data"].__setitem__("activeTargets", {})),
    ("activeTargets a string", lambda d: d["data"].__setitem__("activeTargets", "all")),
    ("target a string", lambda d: d["data"]["activeTargets"].__setitem__(0, "t")),
    (
        "scrapeInterval a number",
        lambda d: d["data"]["activeTargets"][0].__setitem__("scrapeInterval", 15),
    ),
    ("target labels a list", lambda d: d["data"]["activeTargets"][0].__setitem__("labels", [])),
    (
        "target label a number",
        lambda d: d["data"]["activeTargets"][0]["labels"].__setitem__("instance", 9),
    ),
)


def _kinds(case: Case) -> list[str]:
    metrics = sorted({m for g in case.gpus for m in g.values})
    return ["check", "targets", "fresh", "up", *(f"metric:{m}" for m in metrics)]


def _plant_shape(rng: Random, case: Case) -> None:
    kind = rng.choice(_kinds(case))
    payload = _payload(case, kind)
    if kind == "targets":
        name, change = rng.choice(TARGET_SHAPES)
        change(payload)
    elif rng.random() < 0.4 or not payload["data"]["result"]:
        name, change = rng.choice(SHAPES)
        change(payload)
    else:
        result = payload["data"]["result"]
        name, item_change = rng.choice(ITEM_SHAPES)
        if name.startswith("label") and not result[0]["metric"]:
            name, item_change = ITEM_SHAPES[0]
        if rng.random() < 0.15:
            text = rng.choice(NOT_NUMBERS)
            name, item_change = (
                f"value[1] {text!r}",
                lambda r, i: r[i]["value"].__setitem__(1, text),
            )
        item_change(result, rng.randrange(len(result)))
    case.kind, case.reply, case.planted = kind, fake.json_reply(payload), "reject"
    case.mutation = f"{kind}: {name}"


def _json_level(rng: Random, case: Case) -> None:
    """Deep nesting, an endless integer or a NaN literal where a time goes: JSON parsers differ."""
    kind = rng.choice(["check", "fresh", "up", "metric:gputui_gpu_up"])
    text = json.dumps(_payload(case, kind))
    head, sep, tail = text.partition('"value": [')
    if not sep:
        case.kind, case.reply, case.mutation = "", None, "none (no value to change)"
        return
    time_text, comma, rest = tail.partition(",")
    choice = rng.randrange(4)
    if choice == 0:
        depth = rng.choice([33, 100, 1000, 20000])
        body = head + sep + "[" * depth + time_text + "]" * depth + comma + rest
        name, planted = f"value[0] nested {depth} deep", "reject"
    elif choice == 1:
        digits = rng.choice([31, 300, 5000])
        body = head + sep + "1" * digits + comma + rest
        name, planted = f"value[0] an integer of {digits} digits", "reject"
    elif choice == 2:
        body = head + sep + rng.choice(["NaN", "Infinity", "-Infinity"]) + comma + rest
        name, planted = "value[0] a NaN/Infinity literal", "reject"
    else:
        body = head + sep + rng.choice(["1e400", "-1e400", "1" * 25, "0", "-1"]) + comma + rest
        name, planted = "value[0] a time out of range (N/A)", ""
    case.kind, case.reply, case.planted = kind, fake.Reply(body.encode()), planted
    case.mutation = f"{kind}: {name}"


def _bytes_level(rng: Random, case: Case) -> None:
    kind = rng.choice(_kinds(case))
    body = json.dumps(_payload(case, kind)).encode()
    choice = rng.randrange(5)
    cut = rng.randrange(1, len(body))
    if choice == 0:
        reply, name, planted = fake.Reply(body[:cut]), f"cut at {cut} of {len(body)}", "reject"
    elif choice == 1:
        reply = fake.Reply(body[:cut], length=len(body))
        name, planted = f"cut at {cut}, Content-Length {len(body)}", "reject"
    elif choice == 2:
        reply, name, planted = (
            fake.Reply(body, length=cut),
            f"Content-Length {cut} of {len(body)}",
            "reject",
        )
    elif choice == 3:
        at = body.find(b'"', rng.randrange(len(body) - 1))
        at = at if at >= 0 else body.index(b'"')
        reply = fake.Reply(
            body[: at + 1] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80"]) + body[at + 1 :]
        )
        name, planted = "a byte that is not UTF-8 in a string", "reject"
    else:
        flipped = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        reply, name, planted = fake.Reply(bytes(flipped)), "random bytes changed", ""
    case.kind, case.reply, case.planted = kind, reply, planted
    case.mutation = f"{kind}: {name}"


def _http_level(rng: Random, case: Case, slow: bool) -> None:
    kind = rng.choice(_kinds(case))
    body = json.dumps(_payload(case, kind)).encode()
    choices = ["status", "long-header", "headers", "no-length", "error", "escape-reason", "empty"]
    if slow:
        choices += ["drip", "huge"]
    choice = rng.choice(choices)
    planted = "reject"
    if choice == "status":
        status = rng.choice(
            [b"HTTP/1.1 abc", b"HTTQ/1.1 200 OK", b"garbage", b"HTTP/1.1 99999999999 x", b""]
        )
        reply, name = fake.Reply(body, status=status), f"status line {status!r}"
    elif choice == "long-header":
        reply, name = (
            fake.Reply(body, headers=(b"X: " + b"a" * rng.choice([65537, 100000]),)),
            "long header",
        )
    elif choice == "headers":
        n = rng.choice([101, 150, 300])
        reply, name = (
            fake.Reply(body, headers=tuple(b"X-%d: v" % i for i in range(n))),
            f"{n} headers",
        )
    elif choice == "no-length":
        reply, name, planted = fake.Reply(body, length=None), "no Content-Length (valid)", ""
    elif choice == "error":
        code = rng.choice([400, 404, 500, 502, 503, 418])
        reply = fake.Reply(body, status=b"HTTP/1.1 %d Nope" % code)
        name, planted = f"HTTP {code}", ""
    elif choice == "escape-reason":
        reply = fake.Reply(
            b'{"status":"error","error":"\\u001b[31mred"}', status=b"HTTP/1.1 400 \x1b[2J"
        )
        name, planted = "control characters in the reason and error", ""
    elif choice == "empty":
        reply, name = fake.Reply(raw=rng.choice([b"", b"HTTP/1.1 200 OK\r\n"])), "no answer"
    elif choice == "drip":
        reply, name, planted = fake.Reply(body, drip_s=0.5), "one byte every 0.5 s", ""
    else:
        size = rng.choice([65 << 20, 80 << 20])
        reply = fake.Reply(b" " * size, length=rng.choice([fake.AUTO, None]))
        name = f"a body of {size >> 20} MiB"
    case.kind, case.reply, case.planted = kind, reply, planted
    case.mutation = f"{kind}: {name}"


def _hostile_labels(rng: Random, case: Case) -> None:
    gpu = rng.choice(case.gpus)
    gpu.host = rng.choice(
        ["\x1b[2Jnode", "node\u202eevil", "n\x00ul", "\x9b31m", "x" * 300, "gpu-\u0661"]
    )
    case.mutation = f"a hostile host label {gpu.host!r}"


def make_case(rng: Random, slow: bool = True) -> Case:
    """`slow`: allow drips (a 5 s deadline) and 65+ MiB bodies (the campaign, not the unit tests)."""
    command = rng.choices(["snapshot-json", "snapshot", "fit"], weights=[6, 3, 1])[0]
    case = Case(fleet(rng), command, "", None, "none")
    choice = rng.random()
    if choice < 0.12:
        pass  # valid answers: every value must come out as sent
    elif choice < 0.35:
        _plant_values(rng, case)
    elif choice < 0.6:
        _plant_shape(rng, case)
    elif choice < 0.7:
        _json_level(rng, case)
    elif choice < 0.82:
        _bytes_level(rng, case)
    elif choice < 0.94:
        _http_level(rng, case, slow and rng.random() < 0.25)
    else:
        _hostile_labels(rng, case)
    if case.planted != "na":
        case.expect = [
            (g.host, g.index, _field(m), float(v))
            for g in case.gpus
            for m, v in g.values.items()
            if m in SAMPLE_METRICS
        ]
    return case


def case_text(case: Case) -> bytes:
    """The reproducer: what was mutated, the fleet, and the mutated answer as sent."""
    fleet_text = json.dumps(
        [{"host": g.host, "gpu": g.index, "values": g.values} for g in case.gpus]
    )
    lines = [
        f"# command: {case.command}; mutated: {case.mutation}; planted: {case.planted or 'no'}",
        f"# fleet: {fleet_text}",
    ]
    head, body = case.reply.wire() if case.reply is not None else (b"", b"")
    if case.reply is not None and (case.reply.drip_s or case.reply.hold_s):
        lines.append(f"# drip {case.reply.drip_s} s/byte, hold {case.reply.hold_s} s")
    return "\n".join(lines).encode("utf-8", "backslashreplace") + b"\n" + head + body[:4096]


# --- running -------------------------------------------------------------------------------

_SERVER: fake.FakePrometheus | None = None


def server() -> fake.FakePrometheus:
    """One fake server per process: started in the worker itself (threads do not survive fork)."""
    global _SERVER
    if _SERVER is None:
        _SERVER = fake.FakePrometheus()
    return _SERVER


def _responder(case: Case, served: list[bool]) -> fake.Responder:
    """The fleet's answers, `case.reply` for its query; `served` says whether it was asked
    (a command asks only for the series it shows: snapshot's text, fit)."""

    def respond(path: str, params: dict[str, str]) -> fake.Reply:
        kind = fake.kind_of(path, params)
        if case.reply is not None and kind == case.kind:
            served.append(True)
            return case.reply
        return fake.json_reply(fake.fleet_answer(kind, case.gpus))

    return respond


DRIP_DEADLINE = ["--deadline", "5"]  # a drip ends at the command's deadline, inside a case's


def _argv(case: Case, url: str) -> list[str]:
    slow = DRIP_DEADLINE if case.reply is not None and case.reply.drip_s else []
    if case.command == "fit":
        return ["fit", MODELS, "--prometheus", url, *slow]
    return [
        "snapshot",
        "--prometheus",
        url,
        *(["--json"] if case.command == "snapshot-json" else []),
        *slow,
    ]


def _devices(out: str) -> dict[tuple[str, int], dict[str, Any]]:
    data = json.loads(out)
    return {
        (h["host"], d["info"]["index"]): d["sample"] or {}
        for h in data["hosts"]
        for d in h["devices"]
    }


def _shown(value: float, name: str, metric_scale: float) -> float:
    scaled = value * metric_scale
    return scaled if name in _FLOAT_FIELDS else float(round(scaled))


def _memory_sum(sample: dict[str, Any]) -> int | None:
    used, free = sample.get("memory_used"), sample.get("memory_free")
    if used is None or free is None:
        return None
    return int(used + free + (sample.get("memory_reserved") or 0))


def run_case(case: Case, workdir: Path) -> Outcome:
    from gputui.cli import main
    from gputui.core.textsafe import visible

    srv = server()
    served: list[bool] = []
    srv.serve(_responder(case, served))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(_argv(case, srv.url))
    stdout, stderr = out.getvalue(), err.getvalue()
    for stream, text in (("stdout", stdout), ("stderr", stderr)):
        if _UNSAFE.search(text):
            return Outcome("wrong-accept", f"control character on {stream} | {case.mutation}")
    lines = stderr.splitlines()
    if code == 2 or (code == 1 and not stdout):
        if len(lines) != 1 or stdout:
            return Outcome(
                "wrong-accept", f"exit {code} without exactly one line | {stderr[:120]!r}"
            )
        return Outcome("rejected", lines[0])
    if code not in (0, 1) or lines:
        return Outcome("wrong-accept", f"exit {code} with stderr | {stderr[:120]!r}")
    if case.planted == "reject" and served:
        return Outcome("wrong-accept", f"accepted a planted answer | {case.mutation}")
    if case.command != "snapshot-json":
        return OK
    devices = _devices(stdout)
    for host, index, name in case.na:
        sample = devices.get((visible(host), index), {})
        value = sample.get(name)
        if name == "memory_total" and value == _memory_sum(sample):
            continue  # used + free + reserved, all valid: what the reader falls back to
        if value is not None:
            return Outcome(
                "wrong-accept", f"a confident number for a value that is not one | {name}={value!r}"
            )
    if case.reply is None and case.planted == "":
        scales = {f: s for f, s in SAMPLE_METRICS.values()}
        for host, index, name, sent in case.expect:
            got = devices.get((visible(host), index), {}).get(name)
            if got is None or abs(got - _shown(sent, name, scales[name])) > 1e-6 * max(
                1.0, abs(got)
            ):
                return Outcome(
                    "wrong-accept",
                    f"a valid reading shown wrong | {name}: sent {sent}, shown {got}",
                )
    return OK
