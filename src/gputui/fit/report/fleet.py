"""`fit --prometheus`'s output: the fleet's answers grouped, the best GPUs listed.

A fleet of a thousand hosts repeats a few card models, and a fit answer depends on the
card and the free memory only, so the output follows the answers, not the GPUs: one
line per group of GPUs with the same card (or MIG profile) and the same answer (fits
or not, precision, batch, peak), with how many GPUs and hosts it holds and the range
of their free memory and of the largest batch that fits in it; then the best
`LISTED` GPUs, or every GPU with `--all`. JSON carries the groups and the same list
(docs/cluster.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gputui.fit.fleet import FleetAnswer
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


def group(ranking: Ranking[Any], answer: Callable[[Any], tuple[Any, ...]]) -> list[Group]:
    """The ranking's keys grouped by card and `answer`, in the order of their best key."""
    groups: dict[tuple[Any, ...], Group] = {}
    for k in ranking.answers:
        t = k.targets.target
        profile = None if t.mig is None else t.mig.profile
        verdict = answer(k.answer)
        g = groups.get((t.name, profile, verdict))
        if g is None:
            card = t.card.name if t.card else None
            g = groups[(t.name, profile, verdict)] = Group(
                t.name, card, profile, verdict[0], verdict[1]
            )
        g.keys.append(k)
    return list(groups.values())


def _graph_answer(a: Any) -> tuple[Any, ...]:
    return (a.fits, a.peak_bytes, a.precision, a.batch_size)


def _llm_answer(e: Any) -> tuple[Any, ...]:
    return (bool(e.fits_now), int(e.peak_bytes), e.verdict_free)


def _free(k: KeyAnswer) -> int | None:
    return k.targets.target.memory_free  # type: ignore[no-any-return]


def _graph_batch(k: KeyAnswer) -> int:
    return int(k.answer.max_batch_free)


def _llm_batch(k: KeyAnswer) -> int:
    return int(k.answer.max_batch_size_free or 0)


def _llm_seq(k: KeyAnswer) -> int:
    return int(k.answer.longest_seq_free or 0)


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


def _graph_gpu(f: Any) -> dict[str, Any]:
    return {
        **_gpu_json(f),
        "precision": f.precision,
        "batch_size": f.batch_size,
        "peak_bytes": f.peak_bytes,
        "fits": f.fits,
        "max_batch_size_free": f.max_batch_free,
    }


def _llm_gpu(f: Any) -> dict[str, Any]:
    e = f.estimate
    return {
        **_gpu_json(f),
        "peak_bytes": e.peak_bytes,
        "fits": e.fits_now,
        "verdict_free": e.verdict_free,
        "max_batch_size_free": e.max_batch_size_free,
        "longest_seq_len_free": e.longest_seq_free,
    }


def _group_json(g: Group, ranking: Ranking[Any], extra: dict[str, Any]) -> dict[str, Any]:
    best = g.best(ranking)
    return {
        "name": g.name,
        "card": g.card,
        "mig_profile": g.mig_profile,
        "fits": g.fits,
        **extra,
        "peak_bytes": g.peak_bytes,
        "gpus": g.gpus,
        "hosts": g.hosts,
        "memory_free": g.span(_free),
        "best": {"host": best.host.name, "gpu": best.target.index, "mig": _mig_json(best.target)},
    }


def _listing(
    fits: Ranking[Any], every: bool, gpu: Callable[[Any], dict[str, Any]]
) -> dict[str, Any]:
    listed = fits.first(None if every else LISTED)
    return {
        "gpus_total": len(fits),
        "gpus_listed": "all" if every or len(fits) <= LISTED else "best",
        "gpus": [gpu(f) for f in listed],
    }


def graph_entry(m: Any, fits: Ranking[Any], every: bool) -> dict[str, Any]:
    groups = [
        _group_json(
            g,
            fits,
            {
                "precision": g.keys[0].answer.precision,
                "batch_size": g.keys[0].answer.batch_size,
                "max_batch_size_free": g.span(_graph_batch),
            },
        )
        for g in group(fits, _graph_answer)
    ]
    return {
        "model": m.name,
        "kind": "graph",  # the fit document's kinds (docs/fit.md)
        "groups": groups,
        **_listing(fits, every, _graph_gpu),
    }


def llm_entry(name: str, model: Any, fits: Ranking[Any], every: bool) -> dict[str, Any]:
    from gputui.fit.transformer.report import model_dict, workload_dict

    groups = [
        _group_json(
            g,
            fits,
            {
                "verdict_free": g.keys[0].answer.verdict_free,
                "max_batch_size_free": g.span(_llm_batch),
                "longest_seq_len_free": g.span(_llm_seq),
            },
        )
        for g in group(fits, _llm_answer)
    ]
    return {
        "model": name,
        "kind": "transformer",
        "transformer": model_dict(model),
        "workload": workload_dict(fits.answers[0].answer.workload, model) if fits else None,
        "groups": groups,
        **_listing(fits, every, _llm_gpu),
        "mig_advice": _advice(fits, lambda f: int(f.estimate.peak_bytes), ""),
    }


def render_json(header: dict[str, Any], answer: FleetAnswer, *, every: bool) -> str:
    """The fleet's JSON document (docs/cluster.md)."""
    cluster = answer.cluster
    payload = {
        **header,
        "prometheus": cluster.url,
        "timestamp": cluster.timestamp,
        "all_fit": answer.all_fit,
        "fleet": [graph_entry(m, fits, every) for m, fits in answer.layer]
        + [llm_entry(name, model, fits, every) for name, model, fits in answer.transformers],
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


def _advice(fits: Ranking[Any], peak: Callable[[Any], int], prefix: str) -> list[str]:
    """The MIG advice per host (hosts in rank order), for the MIG GPUs where nothing fits
    now; the other GPUs have none, so they are not looked at."""
    from gputui.fit.core.mig import advice_lines

    by_host: dict[str, list[tuple[Any, int]]] = {}
    for f in fits.rows(lambda a: a.targets.target.mig is not None):
        by_host.setdefault(f.host.name, []).append((f.target, peak(f)))
    lines: list[str] = []
    for host, mine in by_host.items():
        lines += advice_lines(mine, prefix=prefix, host=host)
    return lines


def _group_line(g: Group, answer: str, extra: str) -> str:
    verdict = "fits now on" if g.fits else "does not fit now on"
    hosts, gpus = g.hosts, g.gpus
    return (
        f"  {verdict} {hosts:,} host{'s' * (hosts != 1)} ({gpus:,} GPU{'s' * (gpus != 1)}): "
        f"{g.name}  free {_gib_span(g.span(_free))}  {answer}peak {_gib(g.peak_bytes)}  {extra}"
    )


def _listed(fits: Ranking[Any], every: bool, row: Callable[[int, Any, int], str]) -> list[str]:
    listed = fits.first(None if every else LISTED)
    lines = []
    if len(listed) < len(fits):
        lines.append(f"  best {len(listed)} of {len(fits):,} GPUs listed; `--all` for every GPU")
    width = max(len(_where(f)) for f in listed)
    lines += [row(rank, f, width) for rank, f in enumerate(listed, 1)]
    return lines


def _advice_lines(fits: Ranking[Any], peak: Callable[[Any], int], every: bool) -> list[str]:
    lines = _advice(fits, peak, "  ")
    if every or len(lines) <= LISTED:
        return lines
    more = len(lines) - LISTED
    return [*lines[:LISTED], f"  ... {more:,} more MIG advice lines; `--all` for every one"]


def _graph_row(rank: int, f: Any, width: int) -> str:
    verdict = "fits" if f.fits else "no"
    return (
        f"  {rank:>3}. {_where(f).ljust(width)}  {f.target.name}  "
        f"free {_gib(f.target.memory_free)}  {f.precision}  peak {_gib(f.peak_bytes)}  "
        f"{verdict}  max batch now {f.max_batch_free}"
    )


def _llm_row(rank: int, f: Any, width: int) -> str:
    e = f.estimate
    verdict = "fits" if e.fits_now else "no"
    return (
        f"  {rank:>3}. {_where(f).ljust(width)}  {f.target.name}  "
        f"free {_gib(f.target.memory_free)}  peak {_gib(e.peak_bytes)}  {verdict}  "
        f"max batch now {e.max_batch_size_free or 0}  longest seq now {e.longest_seq_free or 0:,}"
    )


def graph_lines(m: Any, fits: Ranking[Any], batch: int, every: bool) -> list[str]:
    can = sum(len(a.targets.members) for a in fits.answers if a.answer.fits)
    lines = [f"{m.name} ({m.mode}, batch {batch}): fits now on {can:,} of {len(fits):,} GPUs"]
    if not fits:
        return [*lines, "  no GPU reports its free memory (DCGM_FI_DEV_FB_FREE)"]
    if len(fits) > LISTED:
        for g in group(fits, _graph_answer):
            answer = f"{g.keys[0].answer.precision}  "
            lines.append(_group_line(g, answer, f"max batch now {_span(g.span(_graph_batch))}"))
    lines += _listed(fits, every, _graph_row)
    return lines + _advice_lines(fits, lambda f: int(f.peak_bytes), every)


def llm_lines(name: str, model: Any, fits: Ranking[Any], every: bool) -> list[str]:
    from gputui.fit.transformer.report import workload_line

    can = sum(len(a.targets.members) for a in fits.answers if a.answer.fits_now)
    lines = [f"{name} (transformer): fits now on {can:,} of {len(fits):,} GPUs"]
    if not fits:
        return [*lines, "  no GPU reports its free memory (DCGM_FI_DEV_FB_FREE)"]
    lines.append("  " + workload_line(fits.answers[0].answer.workload, model))
    if len(fits) > LISTED:
        for g in group(fits, _llm_answer):
            extra = (
                f"max batch now {_span(g.span(_llm_batch))}  "
                f"longest seq now {_span(g.span(_llm_seq))}"
            )
            lines.append(_group_line(g, "", extra))
    lines += _listed(fits, every, _llm_row)
    return lines + _advice_lines(fits, lambda f: int(f.estimate.peak_bytes), every)


def render_text(answer: FleetAnswer, *, every: bool, batch_size: int | None = None) -> str:
    """The fleet's text; `batch_size`: the one asked for (shown when no GPU answered)."""
    cluster = answer.cluster
    gpus = sum(len(h.gpus) for h in cluster.hosts)
    out = [f"cluster: {cluster.url} ({len(cluster.hosts):,} hosts, {gpus:,} GPUs)"]
    for m, fits in answer.layer:
        batch = fits.answers[0].answer.batch_size if fits else (batch_size or m.batch_size)
        out += ["", *graph_lines(m, fits, batch, every)]
    for name, model, llm_fits in answer.transformers:
        out += ["", *llm_lines(name, model, llm_fits, every)]
    return "\n".join(out)
