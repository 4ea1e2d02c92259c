"""Plain-text and JSON renderings of fit results, shared by the CLI and the TUI.

JSON fields: docs/fit.md (bump `SCHEMA_VERSION` when one changes meaning). Text lines
are made visible (textsafe) as rendered: layer, model and card names come from files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from gputui.core.textsafe import visible
from gputui.fit.core import power
from gputui.fit.core.batch import pow2_floor
from gputui.fit.core.roofline import EFFICIENCY as ROOFLINE_EFFICIENCY
from gputui.fit.core.roofline import LayerTime, Profile, missing_figure
from gputui.fit.core.target import Target
from gputui.fit.graph.estimate import ModelCheck, PrecisionEstimate
from gputui.fit.graph.memory import autograd_flags
from gputui.fit.graph.network import Network
from gputui.fit.graph.ranking import Ranked
from gputui.fit.graph.rate import EFFICIENCY, Speed
from gputui.fit.graph.spec import ModelSpec
from gputui.fit.graph.speed import has_convolutions
from gputui.fit.graph.stats import LayerStats

SCHEMA_VERSION = 1


def gib(n: int | float) -> str:
    if abs(n) >= 2**30:
        return f"{n / 2**30:.2f} GiB"
    if abs(n) >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    if abs(n) >= 2**10:
        return f"{n / 2**10:.1f} KiB"
    return f"{int(n)} B"


def flops_text(n: float) -> str:
    for unit, scale in (("TFLOPs", 1e12), ("GFLOPs", 1e9), ("MFLOPs", 1e6), ("kFLOPs", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} FLOPs"


def layer_saved_elements(layer: LayerStats) -> int:
    """Elements per sample this layer itself makes autograd keep (shared tensors counted here too)."""
    kept = sum(s.elements for s in layer.internal_saved if s.kind != "cpu_only")
    if layer.saves_output:
        kept += layer.output_elements
    return kept


# bytes per element of what a layer keeps, training in fp32 on CUDA
_KEPT_BYTES = {"act": 4, "mask": 1, "index": 8, "stat": 4, "cpu_only": 0, "amp_copy": 0}


def layer_dict(
    layer: LayerStats,
    input_shapes: Sequence[tuple[int, ...]],
    name: str | None = None,
    inputs: list[str] | None = None,
    *,
    records: bool = True,
    trains: bool = True,
) -> dict[str, Any]:
    """One node's row: `input_shapes` are its own inputs' (a Multiply keeps both of them).

    `records` / `trains`: whether the node records autograd and whether its own weights
    train (fit.memory.autograd_flags): a frozen layer keeps no input for a weight
    gradient, and a node nothing upstream of it trains keeps nothing at all, as the
    memory walk counts them."""
    if not records:
        saved = kept_bytes = 0
    else:
        saved = layer_saved_elements(layer)
        kept_bytes = sum(s.elements * _KEPT_BYTES[s.kind] for s in layer.internal_saved)
    if records and layer.saves_output:
        kept_bytes += layer.output_elements * 4
    if records and (layer.saves_input or (layer.saves_input_if_trainable and trains)):
        # the inputs autograd keeps, as the memory walk counts them (fit/graph/memory.py)
        slots = layer.saved_slots if layer.saved_slots is not None else range(len(input_shapes))
        n = sum(math.prod(input_shapes[k]) for k in slots if k < len(input_shapes))
        saved += n
        kept_bytes += n * 4
    out: dict[str, Any] = {}
    if name is not None:
        out["name"] = name
    if inputs is not None:
        out["inputs"] = inputs
    return {
        **out,
        "index": layer.index,
        "type": layer.type,
        "output_shape": list(layer.output_shape),
        "params": layer.params,
        "trainable_params": layer.trainable_params,
        "non_trainable_params": layer.non_trainable_params,
        "flops": layer.flops,
        "saved_elements_per_sample": saved,
        "saved_bytes_per_sample_fp32": kept_bytes,
    }


def ref_name(net: Network, ref: tuple[int, int]) -> str:
    """How a graph names a value: "conv", "lstm:1", or a model input's name."""
    src, k = ref
    name = net.inputs[-1 - src].name if src < 0 else net.nodes[src].name
    return f"{name}:{k}" if k else name


def network_layers(net: Network) -> list[dict[str, Any]]:
    _, active, _ = autograd_flags(net)
    return [
        layer_dict(
            node.stats,
            node.input_shapes,
            node.name,
            [ref_name(net, r) for r in node.inputs],
            records=active[i],
            trains=node.trains,
        )
        for i, node in enumerate(net.nodes)
    ]


def peak_tensor_rows(c: ModelCheck, top: int | None = None) -> list[dict[str, Any]]:
    """Tensors alive at the recommended precision's peak, summed by (layer, what), largest first."""
    sums: dict[tuple[str, str], int] = {}
    for t in c.peak_tensors:
        key = (t.layer, t.what)
        sums[key] = sums.get(key, 0) + t.bytes_per_sample * c.batch_size + t.fixed_bytes
    rows = [
        {"layer": layer, "what": what, "bytes": n}
        for (layer, what), n in sorted(sums.items(), key=lambda kv: -kv[1])
        if n
    ]
    return rows[:top] if top is not None else rows


def target_dict(t: Target) -> dict[str, Any]:
    return {
        "name": t.name,
        "index": t.index,
        "catalog_card": t.card.name if t.card else None,
        "architecture": t.architecture.name if t.architecture else None,
        "compute_capability": t.compute_capability,
        "memory_total_bytes": t.memory_total,
        "memory_free_bytes": t.memory_free,
        "mig": None
        if t.mig is None
        else {
            "profile": t.mig.profile,
            "gpu_instance_id": t.mig.gpu_instance_id,
            "compute_instance_id": t.mig.compute_instance_id,
            "mig_index": t.mig.mig_index,
            "uuid": t.mig.uuid,
        },
    }


def estimate_dict(e: PrecisionEstimate) -> dict[str, Any]:
    return {
        "precision": e.precision,
        "offered": e.offered,
        "reason": e.reason,
        "batch_size": e.batch_size,
        "peak_bytes": e.peak_bytes,
        "tensor_bytes": e.breakdown.tensor_bytes,
        "peak_phase": e.peak_phase,
        "limit_bytes": e.limit_bytes,
        "fits": e.fits,
        "verdict": e.verdict,
        "max_batch_size": e.max_batch_size,
        "max_batch_size_pow2": pow2_floor(e.max_batch_size),
        "free_bytes": e.free_bytes,
        "verdict_free": e.verdict_free,
        "max_batch_size_free": e.max_batch_size_free,
        "max_batch_size_free_pow2": (
            pow2_floor(e.max_batch_size_free) if e.max_batch_size_free is not None else None
        ),
        "breakdown": e.breakdown.as_dict(),
        "step_time_s": e.speed.step_time_s if e.speed else None,
        "samples_per_s": e.speed.samples_per_s if e.speed else None,
        "peak_tflops_used": e.speed.peak_tflops if e.speed else None,
        **speed_bounds_dict(e.speed),
    }


def speed_bounds_dict(s: Speed | None) -> dict[str, Any]:
    """Where the estimated step time goes (fit.roofline): per model and per layer."""
    prof = s.profile if s is not None else None
    if prof is None:
        return {"bound": None, "time_share_by_bound": None, "layer_bounds": None}
    return {
        "bound": prof.bound,
        "time_share_by_bound": prof.shares,
        "layer_bounds": [
            {
                "network": lt.network,
                "index": lt.layer,
                "layer": lt.label,
                "bound": lt.bound,
                "seconds": lt.seconds,
            }
            for lt in prof.layers
        ],
    }


def bound_text(s: Speed | None) -> str:
    """'memory 68%': the bound taking most of the step, and its share."""
    if s is None or s.profile is None:
        return "-"
    prof = s.profile
    return f"{prof.bound} {prof.shares[prof.bound]:.0%}"


def model_summary(model: ModelSpec) -> dict[str, Any]:
    layers: dict[str, Any]
    if model.network is not None:
        layers = {"layers": network_layers(model.network)}
    else:
        assert model.generator is not None and model.discriminator is not None
        layers = {
            "generator_layers": network_layers(model.generator),
            "discriminator_layers": network_layers(model.discriminator),
        }
    return {
        "name": model.name,
        "kind": model.kind,
        "warnings": list(model.warnings),
        "mode": model.mode,
        "optimizer": model.optimizer,
        "params": model.params,
        "trainable_params": model.trainable_params,
        "non_trainable_params": model.params - model.trainable_params,
        "flops_per_sample": model.flops,
        "software": model_software_dict(model),
        **layers,
    }


def model_software_dict(model: ModelSpec) -> dict[str, Any]:
    """What the speed assumed of the framework (fit.software): layout and optimizer kernels."""
    from gputui.fit.core.software import software_dict

    return software_dict(model.software, training=model.mode == "train")


def speed_assumes(model: ModelSpec) -> str:
    """The text line saying which software settings the speed estimate assumed."""
    from gputui.fit.core.software import describe

    text = describe(
        model.software, training=model.mode == "train", convolutions=has_convolutions(model)
    )
    return f"speed assumes: {text}"


def check_dict(c: ModelCheck, include_layers: bool = True) -> dict[str, Any]:
    summary = model_summary(c.model)
    if not include_layers:
        for key in ("layers", "generator_layers", "discriminator_layers"):
            summary.pop(key, None)
    return {
        **summary,
        "batch_size": c.batch_size,
        "gpu": target_dict(c.target),
        "backend": c.backend,
        "recommended_precision": c.recommended,
        "recommendation_reason": c.recommended_reason,
        "estimates": [estimate_dict(e) for e in c.estimates],
        "peak_tensors": peak_tensor_rows(c),
    }


def ranking_dict(model: ModelSpec, ranked: list[Ranked]) -> dict[str, Any]:
    return {
        "model": model.name,
        "software": model_software_dict(model),
        "efficiency_assumed": EFFICIENCY,
        "roofline_efficiency": dict(ROOFLINE_EFFICIENCY),
        "cards": [
            {
                "rank": i + 1,
                "card": r.card.name,
                "precision": r.precision,
                "peak_bytes": r.estimate.peak_bytes,
                "memory_bytes": r.card.memory_bytes,
                "verdict": r.estimate.verdict,
                "fits": r.estimate.fits,
                "max_batch_size": r.estimate.max_batch_size,
                "samples_per_s": r.samples_per_s,
                "bound": r.estimate.speed.profile.bound
                if r.estimate.speed and r.estimate.speed.profile
                else None,
                "time_share_by_bound": r.estimate.speed.profile.shares
                if r.estimate.speed and r.estimate.speed.profile
                else None,
                "speed_basis": r.estimate.speed.basis if r.estimate.speed else None,
                "speed_figure_derived": r.estimate.speed.derived if r.estimate.speed else None,
                "speed_unknown_reason": r.unknown_reason,
                "samples_per_s_floor": r.lower_bound.samples_per_s if r.lower_bound else None,
                "launch_price_usd": r.card.launch_price_usd,
                "samples_per_s_per_1000_usd": (
                    r.samples_per_s_per_dollar * 1000 if r.samples_per_s_per_dollar else None
                ),
                **power.json_fields(r.samples_per_s, r.card, power.SAMPLES),
            }
            for i, r in enumerate(ranked)
        ],
    }


# ---------------------------------------------------------------- text


def batch_text(n: int | None) -> str:
    if n is None:
        return "-"
    if n >= 1 << 24:
        return "unbounded"
    if n == 0:
        return "0"
    return f"{n:,} ({pow2_floor(n):,})"


def render_check(c: ModelCheck, show_layers: bool = False) -> list[str]:
    m = c.model
    lines = [
        # an optimizer only runs in training: "inference, adam" would say it does
        f"{m.name}: {m.kind}, {c.mode}{f', {m.optimizer}' if c.mode == 'train' else ''}, "
        f"batch {c.batch_size}; "
        f"{m.params:,} params ({m.trainable_params:,} trainable), "
        f"{flops_text(m.flops)}/sample forward",
        f"  recommended: {c.recommended} - {c.recommended_reason}",
        f"  {speed_assumes(m)}",
    ]
    free = c.target.memory_free is not None
    head = f"  {'precision':<9} {'peak':>10}  {'verdict':<12} {'max batch (pow2)':>18}"
    if free:
        head += f"  {'now: verdict':<12} {'max batch now':>16}"
    head += f"  {'samples/s (est.)':>16}"
    lines.append(head)
    for e in c.estimates:
        mark = "*" if e.precision == c.recommended else (" " if e.offered else "-")
        row = (
            f" {mark}{e.precision:<9} {gib(e.peak_bytes):>10}  {e.verdict:<12} "
            f"{batch_text(e.max_batch_size):>18}"
        )
        if free:
            row += f"  {e.verdict_free or '-':<12} {batch_text(e.max_batch_size_free):>16}"
        sps = f"{e.speed.samples_per_s:,.0f}" if e.speed else "-"
        row += f"  {sps:>16}"
        lines.append(row)
    lines.append("  (* recommended, - not offered on this GPU: " + _not_offered(c) + ")")
    e = c.chosen
    b = e.breakdown
    lines.append(
        f"  {e.precision} at batch {e.batch_size}: peak {gib(b.total)} during {e.peak_phase}"
    )
    lines.append(
        f"    weights {gib(b.weights)} | gradients {gib(b.gradients)} | optimizer state "
        f"{gib(b.optimizer_state)} | activations {gib(b.activations)} | workspace "
        f"{gib(b.workspace)} | CUDA context {gib(b.cuda_context)} | allocator {gib(b.allocator)}"
    )
    if e.speed and e.speed.profile:
        shares = e.speed.profile.shares
        lines.append(
            f"    step time ~{e.speed.step_time_s * 1000:.2f} ms (rough roofline estimate: "
            + " | ".join(f"{b}-bound {shares[b]:.0%}" for b in shares)
            + f" of the time; {e.speed.profile.ceilings.basis})"
        )
    elif e.speed:
        why = (missing_figure(c.target.card) if c.target.card is not None else None) or (
            "no card figures"
        )
        lines.append(
            f"    step time ~{e.speed.step_time_s * 1000:.2f} ms (rough estimate: FLOPs at "
            f"{EFFICIENCY:.0%} of the card's {e.speed.peak_tflops:g} TFLOPS {e.precision} peak "
            f"plus launch overhead; {why} for a roofline)"
        )
    rows = peak_tensor_rows(c, top=8)
    if rows:
        lines.append(f"    alive at that moment (largest, batch {c.batch_size}):")
        for tensor in rows:
            lines.append(f"      {gib(tensor['bytes']):>10}  {tensor['layer']}: {tensor['what']}")
    lines += [f"  warning: {warning}" for warning in m.warnings]
    if show_layers:
        lines.extend(render_layers(m, e.speed.profile if e.speed else None))
    return [visible(line) for line in lines]


def _not_offered(c: ModelCheck) -> str:
    names = [e.precision for e in c.estimates if not e.offered]
    return ", ".join(names) if names else "none"


def render_layers(m: ModelSpec, prof: Profile | None = None) -> list[str]:
    """The layer table; with a roofline profile, each layer's bound and share of the step."""
    lines = []
    bounds = {(lt.network, lt.layer): lt for lt in prof.layers} if prof is not None else {}
    for label, net in (
        (("", m.network),)
        if m.network is not None
        else (("generator ", m.generator), ("discriminator ", m.discriminator))
    ):
        assert net is not None
        graph = m.kind == "functional"
        first = "name" if graph else "layer"
        lines.append(
            f"    {label}{'#':>3} {first:<22} {'output shape':<18} {'params':>12} "
            f"{'FLOPs':>12} {'kept/sample':>12}"
            + (f" {'bound (time)':>16}" if prof is not None else "")
            + ("  type <- inputs" if graph else "")
        )
        net_key = label.strip()
        for pos, (node, d) in enumerate(zip(net.nodes, network_layers(net), strict=True)):
            layer = node.stats
            shown_name = node.name if graph else layer.type
            tail = f"  {layer.type} <- {', '.join(d['inputs'])}" if graph else ""
            lines.append(
                f"    {' ' * len(label)}{layer.index:>3} {shown_name:<22} "
                f"{str(tuple(layer.output_shape)):<18} {layer.params:>12,} "
                f"{flops_text(layer.flops):>12} {gib(d['saved_bytes_per_sample_fp32']):>12}"
                + (_layer_bound_cell(bounds, net_key, pos, prof) if prof else "")
                + tail
            )
    return lines


def _layer_bound_cell(
    bounds: dict[tuple[str, int], LayerTime], net: str, index: int, prof: Profile
) -> str:
    lt = bounds.get((net, index))
    if lt is None:
        return f" {'-':>16}"
    share = lt.seconds / prof.step_time_s if prof.step_time_s > 0 else 0.0
    return f" {f'{lt.bound} {share:.1%}':>16}"


def _speed_cell(r: Ranked) -> str:
    if r.samples_per_s is None:
        return "unknown"
    mark = "~" if r.estimate.speed is not None and r.estimate.speed.derived else ""
    return f"{mark}{r.samples_per_s:,.0f}"


def render_ranking(
    model: ModelSpec, ranked: list[Ranked], batch: int, top_value: int = 10
) -> list[str]:
    name_w = max([34, *(len(r.card.name) for r in ranked)])
    lines = [
        f"{model.name} on every catalog card (recommended precision per card, batch {batch}; "
        "speed is a rough roofline estimate; bound: what most of the step waits on):",
        f"  {speed_assumes(model)}",
        f"  {'#':>2} {'card':<{name_w}} {'precision':<9} {'memory':>10} {'peak':>10} "
        f"{'verdict':<12} {'max batch':>10} {'samples/s':>11} {'bound':>12} "
        f"{'per $1k launch':>14}",
    ]
    for i, r in enumerate(ranked):
        per = r.samples_per_s_per_dollar
        lines.append(
            f"  {i + 1:>2} {r.card.name:<{name_w}} {r.precision:<9} {gib(r.card.memory_bytes):>10} "
            f"{gib(r.estimate.peak_bytes):>10} {r.estimate.verdict:<12} "
            f"{r.estimate.max_batch_size:>10,} {_speed_cell(r):>11} "
            f"{bound_text(r.estimate.speed):>12} "
            f"{(f'{per * 1000:,.1f}' if per is not None else '-'):>14}"
        )
    if any(r.estimate.speed is not None and r.estimate.speed.derived for r in ranked):
        lines.append(
            "  ~ the card's figure for that precision is derived from an architecture rule "
            "(see `gputui catalog show CARD`)"
        )
    for r in ranked:
        if r.unknown_reason is not None:
            placed = (
                f"placed by {r.lower_bound.basis}, a rate it is sure to reach"
                if r.lower_bound
                else "placed last"
            )
            lines.append(f"  unknown: {r.card.name}: {r.unknown_reason} ({placed})")
    for r in ranked:
        s = r.estimate.speed
        if s is not None and s.basis.startswith("fp32 rate"):
            lines.append(f"  note: {r.card.name} runs {r.precision} at its {s.basis}")
    priced = [r for r in ranked if r.samples_per_s_per_dollar is not None and r.estimate.fits]
    priced.sort(key=lambda r: -(r.samples_per_s_per_dollar or 0.0))
    if priced:
        lines.append(
            f"  per launch dollar (USD launch price where NVIDIA published one; "
            f"{len(ranked) - len(priced)} cards without one, or not fitting, left out):"
        )
        for i, r in enumerate(priced[:top_value]):
            per = (r.samples_per_s_per_dollar or 0.0) * 1000
            lines.append(
                f"    {i + 1:>2} {r.card.name:<{name_w}} {per:>8,.1f} samples/s per $1k "
                f"(launch price ${r.card.launch_price_usd:,.0f})"
            )
    scored = [(r.card, r.samples_per_s, r.estimate.fits) for r in ranked]
    lines += power.ranking_lines(scored, power.SAMPLES, name_w, top_value)
    return [visible(line) for line in lines]


def json_safe(value: Any) -> Any:
    """`value` with every non-finite float as null: JSON has no infinity (a model with no
    work has an unbounded samples/s), and `json.dumps(allow_nan=False)` would raise."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
