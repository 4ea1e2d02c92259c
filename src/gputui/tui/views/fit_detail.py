"""The Fit screen's detail for a layer model's row: a head (what the model is, the
recommended precision, the peak), then memory at the peak, precisions, layers (with the
roofline's bound per layer) and the catalog ranking from the worker's pass.

Textual-free: screens/fit.py lays out the screen; these only build rich renderables.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from gputui.core.textsafe import visible
from gputui.fit import ModelCheck, ModelSpec, Profile, Ranked
from gputui.fit.report import (
    batch_text,
    flops_text,
    gib,
    network_layers,
    speed_assumes,
)
from gputui.tui.views.detail_tables import (
    VERDICT_STYLE,
    breakdown_table,
    ranking_table,
    titled_table,
)


def verdict_text(verdict: str | None) -> Text:
    if verdict is None:
        return Text("-")
    return Text(verdict, style=VERDICT_STYLE.get(verdict, ""))


def precision_table(c: ModelCheck) -> Table:
    t = titled_table(
        "Precisions",
        (
            "precision",
            "offered",
            "peak",
            "total",
            "max batch",
            "now",
            "max batch now",
            "samples/s (rough)",
        ),
        left={"precision"},
    )
    for e in c.estimates:
        t.add_row(
            ("* " if e.precision == c.recommended else "") + e.precision,
            "yes" if e.offered else "no",
            gib(e.peak_bytes),
            verdict_text(e.verdict),
            batch_text(e.max_batch_size),
            verdict_text(e.verdict_free),
            batch_text(e.max_batch_size_free),
            f"{e.speed.samples_per_s:,.0f}" if e.speed and e.speed.samples_per_s else "-",
        )
    return t


def layers_table(m: ModelSpec, prof: Profile | None = None) -> Table:
    labels = ["net", "#", "layer", "output shape", "params", "FLOPs", "kept/sample (fp32)"]
    if prof is not None:  # the roofline of the chosen precision: what each layer waits on
        labels.append("bound (share of step)")
    t = titled_table("Layers", labels, left={"net", "layer"})
    bounds = {(lt.network, lt.layer): lt for lt in prof.layers} if prof is not None else {}
    nets = (
        [("", m.network)] if m.network is not None else [("G", m.generator), ("D", m.discriminator)]
    )
    for label, net in nets:
        if net is None:
            continue
        key = {"": "", "G": "generator", "D": "discriminator"}[label]
        # Each node's own inputs (a branch reads a model input or a skip, not the
        # layer listed before it): the graph engine's per-node figures (fit.report).
        for pos, (node, d) in enumerate(zip(net.nodes, network_layers(net), strict=True)):
            layer = node.stats
            cells: list[str | Text] = [
                label,
                str(layer.index),
                Text(visible(layer.type)),
                str(tuple(layer.output_shape)),
                f"{layer.params:,}",
                flops_text(layer.flops),
                gib(d["saved_bytes_per_sample_fp32"]),
            ]
            if prof is not None:
                lt = bounds.get((key, pos))
                share = lt.seconds / prof.step_time_s if lt and prof.step_time_s else 0.0
                cells.append(f"{lt.bound} {share:.1%}" if lt else "-")
            t.add_row(*cells)
    return t


def model_detail(c: ModelCheck, ranked: list[Ranked[Any]] | None) -> Group:
    """Everything about one layer model on one GPU, for the pane under the Fit table."""
    m = c.model
    e = c.chosen
    head = Text()
    head.append(visible(m.name), style="bold")
    head.append(
        # An optimizer only where one runs: training (not inference, nor evaluation).
        f"  {m.kind}, {c.mode}{f', {m.optimizer}' if c.mode == 'train' else ''},"
        f" batch {c.batch_size}; {m.params:,} params "
        f"({m.trainable_params:,} trainable); {flops_text(m.flops)}/sample forward\n"
    )
    head.append(f"Recommended {c.recommended}: {c.recommended_reason}\n")
    head.append(f"Peak {gib(e.peak_bytes)} during {e.peak_phase}\n", style="bold")
    head.append(speed_assumes(m) + "\n", style="dim")
    return Group(
        head,
        breakdown_table(e.breakdown.as_dict()),
        precision_table(c),
        *(
            [layers_table(m, e.speed.profile if e.speed else None)]
            if isinstance(m, ModelSpec)
            else []
        ),
        ranking_table(ranked),
    )
