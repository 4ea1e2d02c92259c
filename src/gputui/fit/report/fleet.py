"""`fit --prometheus`'s output: the fleet's answers grouped, the best GPUs listed.

A fleet of a thousand hosts repeats a few card models, and a fit answer depends on the
card and the free memory only, so the output follows the answers, not the GPUs: one
line per group of GPUs with the same card (or MIG profile) and the same answer (fits
or not, precision, batch, peak, verdict), with how many GPUs and hosts it holds and the range
of their free memory and of the largest batch that fits in it; then the best
`LISTED` GPUs, or every GPU with `--all`. JSON carries the groups and the same list
(docs/cluster.md).

One builder for every model kind (a JSON entry, a model's lines): each reads the
fleet's one answer (fit.fleet.KeyFit), and a kind with a sequence adds its longest
sequence from the answer's one nested object, so every kind's entry has the same keys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gputui.fit.fleet import FleetAnswer, FleetFit, KeyFit, ModelFleet
from gputui.fit.fleet_rank import KeyAnswer, Ranking
from gputui.fit.report.document import dumps

LISTED = 10  # GPUs listed per model without --all


@dataclass
class Group:
    """Keys (KeyAnswer) with the same card and the same answer, in rank order."""

    name: str
    card: str | None
    mig_profile: str | None
    fits: bool
    peak_bytes: int
    keys: list[KeyAnswer] = field(default_factory=list)

    @property
    def gpus(self) -> int:
        return sum(len(k.targets.members) for k in self.keys)

    @property
    def hosts(self) -> int:
        return len(frozenset().union(*(k.targets.hosts for k in self.keys)))

    def span(self, value: Callable[[KeyAnswer], int | None]) -> dict[str, int | None]:
        values = [v for k in self.keys if (v := value(k)) is not None]
        return {"min": min(values, default=None), "max": max(values, default=None)}

    def best(self, ranking: Ranking[Any]) -> Any:
        """The group's first GPU in rank order."""
        mine = {id(k) for k in self.keys}
        return next(ranking.rows(lambda a: id(a) in mine))


def group(ranking: Ranking[FleetFit]) -> list[Group]:
    """The ranking's keys grouped by card and answer, in the order of their best key."""
    groups: dict[tuple[Any, ...], Group] = {}
    for k in ranking.answers:
        t = k.targets.target
        profile = None if t.mig is None else t.mig.profile
        a: KeyFit = k.answer
        verdict = (a.fits, a.peak_bytes, a.precision, a.batch_size, a.verdict_free)
        g = groups.get((t.name, profile, verdict))
        if g is None:
            card = t.card.name if t.card else None
            g = groups[(t.name, profile, verdict)] = Group(
                t.name, card, profile, a.fits, a.peak_bytes
            )
        g.keys.append(k)
    return list(groups.values())


def _free(k: KeyAnswer) -> int | None:
    return k.targets.target.memory_free  # type: ignore[no-any-return]


def _batch(k: KeyAnswer) -> int:
    return int(k.answer.max_batch_free)


def _seq(k: KeyAnswer) -> int | None:
    sequence = k.answer.sequence
    return None if sequence is None else int(sequence.longest_seq_free)


# --- JSON -----------------------------------------------------------------------------
def _mig_json(t: Any) -> dict[str, Any] | None:
    if t.mig is None:
        return None
    return {"profile": t.mig.profile, "gpu_instance_id": t.mig.gpu_instance_id}


def _gpu_json(f: Any) -> dict[str, Any]:
    return {
        "host": f.host.name,
        "gpu": f.target.index,
        "name": f.target.name,
        "card": f.target.card.name if f.target.card else None,
        "mig": _mig_json(f.target),
        "memory_total": f.target.memory_total,
        "memory_free": f.target.memory_free,
    }


def _fit_json(a: KeyFit) -> dict[str, Any]:
    """One answer's figures, the same keys for every kind (null where the kind has none)."""
    return {
        "precision": a.precision,
        "batch_size": a.batch_size,
        "peak_bytes": a.peak_bytes,
        "fits": a.fits,
        "verdict_free": a.verdict_free,
        "max_batch_size_free": a.max_batch_free,
        "longest_seq_len_free": None if a.sequence is None else a.sequence.longest_seq_free,
    }


def _group_json(g: Group, ranking: Ranking[FleetFit]) -> dict[str, Any]:
    best = g.best(ranking)
    first: KeyFit = g.keys[0].answer
    return {
        "name": g.name,
        "card": g.card,
        "mig_profile": g.mig_profile,
        "fits": g.fits,
        "precision": first.precision,
        "batch_size": first.batch_size,
        "verdict_free": first.verdict_free,
        "peak_bytes": g.peak_bytes,
        "gpus": g.gpus,
        "hosts": g.hosts,
        "memory_free": g.span(_free),
        "max_batch_size_free": g.span(_batch),
        "longest_seq_len_free": g.span(_seq),
        "best": {"host": best.host.name, "gpu": best.target.index, "mig": _mig_json(best.target)},
    }


def entry(r: ModelFleet, every: bool) -> dict[str, Any]:
    """One model's `fleet` entry, whatever its kind (docs/cluster.md)."""
    from gputui.fit.transformer.report import model_dict, workload_dict

    fits = r.ranking
    listed = fits.first(None if every else LISTED)
    workload = _workload(r)
    model = r.sequence_model
    return {
        "model": r.model.name,
        "kind": "graph" if model is None else "transformer",  # the fit document's kinds
        "transformer": None if model is None else model_dict(model),
        "workload": None if workload is None else workload_dict(workload, model),
        "groups": [_group_json(g, fits) for g in group(fits)],
        "gpus_total": len(fits),
        "gpus_listed": "all" if every or len(fits) <= LISTED else "best",
        "gpus": [{**_gpu_json(f), **_fit_json(f.answer)} for f in listed],
        "mig_advice": _advice(fits, ""),
    }


def _workload(r: ModelFleet) -> Any:
    """The workload of a kind with a sequence, as estimated on the best GPU (None: none)."""
    if not r.ranking:
        return None
    sequence = r.ranking.answers[0].answer.sequence
    return None if sequence is None else sequence.workload


def render_json(header: dict[str, Any], answer: FleetAnswer, *, every: bool) -> str:
    """The fleet's JSON document (docs/cluster.md)."""
    cluster = answer.cluster
    payload = {
        **header,
        "prometheus": cluster.url,
        "timestamp": cluster.timestamp,
        "all_fit": answer.all_fit,
        "fleet": [entry(r, every) for r in answer.models],
    }
    return dumps(payload)  # the fit document's writer: a non-finite float is null


# --- text -----------------------------------------------------------------------------
def _gib(value: int | None) -> str:
    return "N/A" if value is None else f"{value / 2**30:.1f} GiB"


def _gib_span(span: dict[str, int | None]) -> str:
    lo, hi = span["min"], span["max"]
    if lo is None or hi is None or lo == hi:
        return _gib(lo)
    return f"{lo / 2**30:.1f}-{hi / 2**30:.1f} GiB"


def _span(span: dict[str, int | None]) -> str:
    lo, hi = span["min"], span["max"]
    return f"{lo or 0:,}" if lo == hi else f"{lo or 0:,}-{hi or 0:,}"


def _where(f: Any) -> str:
    where = f"{f.host.name} GPU {f.target.index}"
    return where if f.target.mig is None else f"{where} MIG {f.target.mig.label}"


def _advice(fits: Ranking[FleetFit], prefix: str) -> list[str]:
    """The MIG advice per host (hosts in rank order), for the MIG GPUs where nothing fits
    now; the other GPUs have none, so they are not looked at."""
    from gputui.fit.core.mig import advice_lines

    by_host: dict[str, list[tuple[Any, int]]] = {}
    for f in fits.rows(lambda a: a.targets.target.mig is not None):
        by_host.setdefault(f.host.name, []).append((f.target, f.answer.peak_bytes))
    lines: list[str] = []
    for host, mine in by_host.items():
        lines += advice_lines(mine, prefix=prefix, host=host)
    return lines


def _sequence_text(seq: str | None) -> str:
    return "" if seq is None else f"  longest seq now {seq}"


def _group_line(g: Group) -> str:
    verdict = "fits now on" if g.fits else "does not fit now on"
    hosts, gpus = g.hosts, g.gpus
    seq = g.span(_seq)
    return (
        f"  {verdict} {hosts:,} host{'s' * (hosts != 1)} ({gpus:,} GPU{'s' * (gpus != 1)}): "
        f"{g.name}  free {_gib_span(g.span(_free))}  {g.keys[0].answer.precision}  "
        f"peak {_gib(g.peak_bytes)}  max batch now {_span(g.span(_batch))}"
        + _sequence_text(None if seq["min"] is None else _span(seq))
    )


def _row(rank: int, f: FleetFit, width: int) -> str:
    a = f.answer
    return (
        f"  {rank:>3}. {_where(f).ljust(width)}  {f.target.name}  "
        f"free {_gib(f.target.memory_free)}  {a.precision}  peak {_gib(a.peak_bytes)}  "
        f"{'fits' if a.fits else 'no'}  max batch now {a.max_batch_free}"
        + _sequence_text(None if a.sequence is None else f"{a.sequence.longest_seq_free:,}")
    )


def _title(r: ModelFleet) -> str:
    """`name (mode, batch N)`; a kind with a sequence, `name (transformer)` (its workload
    on the next line)."""
    if r.sequence_model is not None:
        return f"{r.model.name} (transformer)"
    if r.ranking:
        first: KeyFit = r.ranking.answers[0].answer
        mode, batch = first.mode, first.batch_size
    else:  # no GPU answered: what was asked
        asked: Any = r.model.request
        mode, batch = asked.model.mode, asked.batch_size or asked.model.batch_size
    return f"{r.model.name} ({mode}, batch {batch})"


def model_lines(r: ModelFleet, every: bool) -> list[str]:
    """One model's lines, whatever its kind: its title, then (more than LISTED GPUs) one
    line per group, the best GPUs, and the MIG advice."""
    from gputui.fit.transformer.report import workload_line

    fits = r.ranking
    can = sum(len(a.targets.members) for a in fits.answers if a.answer.fits)
    lines = [f"{_title(r)}: fits now on {can:,} of {len(fits):,} GPUs"]
    if not fits:
        return [*lines, "  no GPU reports its free memory (DCGM_FI_DEV_FB_FREE)"]
    workload = _workload(r)
    if workload is not None:
        lines.append("  " + workload_line(workload, r.sequence_model))
    if len(fits) > LISTED:
        lines += [_group_line(g) for g in group(fits)]
    listed = fits.first(None if every else LISTED)
    if len(listed) < len(fits):
        lines.append(f"  best {len(listed)} of {len(fits):,} GPUs listed; `--all` for every GPU")
    width = max(len(_where(f)) for f in listed)
    lines += [_row(rank, f, width) for rank, f in enumerate(listed, 1)]
    advice = _advice(fits, "  ")
    if every or len(advice) <= LISTED:
        return lines + advice
    more = len(advice) - LISTED
    return [
        *lines,
        *advice[:LISTED],
        f"  ... {more:,} more MIG advice lines; `--all` for every one",
    ]


def render_text(answer: FleetAnswer, *, every: bool) -> str:
    """The fleet's text."""
    cluster = answer.cluster
    gpus = sum(len(h.gpus) for h in cluster.hosts)
    out = [f"cluster: {cluster.url} ({len(cluster.hosts):,} hosts, {gpus:,} GPUs)"]
    for r in answer.models:
        out += ["", *model_lines(r, every)]
    return "\n".join(out)
