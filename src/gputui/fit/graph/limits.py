"""How many layer calls one model may have, and the one error that says so.

Why a bound at all: every layer call costs memory while a model is checked (its
table as read, its node, its phases in each precision's walk, its kernels in each
precision's op list), and the files are read whole. The bound keeps a check within
about a gigabyte; the work itself is linear in the layers. Both importers (the models
file and Keras JSON) and the graph walk (blocks expanded) refuse past it, with the
same words.
"""

from __future__ import annotations

from gputui.core.errors import UserError

MAX_LAYERS = 50_000  # layer calls per model, blocks expanded
# Peak memory of a check per layer call, measured by benchmarks/large_graphs.py
# (the "MiB" column over the layers: 15 to 22 KiB on its three graph kinds), rounded up.
LAYER_COST_KIB = 24


def too_many_layers(where: str, count: int | None = None) -> UserError:
    """The error for a model past MAX_LAYERS; `count` when it is known (else "more than")."""
    many = f"{count:,} layers" if count is not None else f"more than {MAX_LAYERS:,} layers"
    return UserError(
        f"{where}: {many}; at most {MAX_LAYERS:,} layers are checked: each costs about "
        f"{LAYER_COST_KIB} KiB of memory here, {MAX_LAYERS * LAYER_COST_KIB / (1 << 20):.1f} GiB "
        "at the bound"
    )
