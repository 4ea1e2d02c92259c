"""A layer model's text: the check on one GPU (a row per precision, the breakdown, the
tensors alive at the peak, the layer table) and the title of its ranking (the table is
fit.report.ranking_text's, as every kind's).

Lines are made visible (textsafe) as rendered: layer, model and card names come from files.
"""

from __future__ import annotations

from gputui.core.textsafe import visible
from gputui.fit.core.phased import PhasedModel
from gputui.fit.core.roofline import LayerTime, Profile
from gputui.fit.core.speed import Speed
from gputui.fit.graph.estimate import ModelCheck
from gputui.fit.graph.runtime import runtime_note
from gputui.fit.importers.modelsfile import ModelSpec
from gputui.fit.report.graph_facts import network_layers, peak_tensor_rows, speed_assumes
from gputui.fit.units import batch_text, flops_text, gib


def bound_text(s: Speed | None) -> str:
    """'memory 68%': the bound taking most of the step, and its share."""
    if s is None or s.profile is None:
        return "-"
    prof = s.profile
    return f"{prof.bound} {prof.shares[prof.bound]:.0%}"


def render_check(c: ModelCheck, show_layers: bool = False) -> list[str]:
    m = c.model
    lines = [
        # an optimizer only runs in training: "inference, adam" would say it does
        f"{m.name}: {m.kind}, {c.mode}{f', {m.optimizer}' if c.mode == 'train' else ''}, "
        f"batch {c.batch_size}; "
        f"{m.params:,} params ({m.trainable_params:,} trainable), "
        f"{flops_text(m.flops)}/sample forward",
        f"  recommended: {c.recommended} - {c.recommended_reason}",
        *runtime_lines(m),
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
        sps = f"{e.speed.samples_per_s:,.0f}" if e.speed and e.speed.samples_per_s else "-"
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
            f"    step time ~{e.speed.profile.step_time_s * 1000:.2f} ms (rough roofline estimate: "
            + " | ".join(f"{b}-bound {shares[b]:.0%}" for b in shares)
            + f" of the time; {e.speed.profile.ceilings.basis})"
        )
    elif e.speed and e.speed.unknown_reason:
        floor = e.speed.floor.get("step")
        at_least = f"; at least ~{floor:,.0f} samples/s at {e.speed.floor_basis}" if floor else ""
        lines.append(f"    speed unknown: {e.speed.unknown_reason}{at_least}")
    rows = peak_tensor_rows(c, top=8)
    if rows:
        lines.append(f"    alive at that moment (largest, batch {c.batch_size}):")
        for tensor in rows:
            lines.append(f"      {gib(tensor['bytes']):>10}  {tensor['layer']}: {tensor['what']}")
    lines += [f"  warning: {warning}" for warning in m.warnings]
    if show_layers and isinstance(m, ModelSpec):
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


def model_title(model: ModelSpec | PhasedModel, batch: int) -> list[str]:
    """The lines above a layer model's ranking (fit.report.ranking_text's table)."""
    return [
        f"{model.name} on every catalog card (recommended precision per card, batch {batch}; "
        "speed is a rough roofline estimate; bound: what most of the step waits on):",
        *runtime_lines(model),
        f"  {speed_assumes(model)}",
    ]


def runtime_lines(model: ModelSpec | PhasedModel) -> list[str]:
    """Which runtime the memory assumes and why; a line saying so when it is not modelled."""
    lines = [f"  runtime: {model.runtime} ({model.runtime_source})"]
    note = runtime_note(model.runtime)
    return lines + ([f"  warning: {note}"] if note else [])
