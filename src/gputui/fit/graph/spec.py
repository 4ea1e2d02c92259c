"""A layer model as the engine reads it: its networks, batch, optimizer and mode.

The models file (fit/importers/modelsfile.py) and the Keras importer build it; the layer
walk, the estimate and the roofline read it. It lives with the graph engine so
the engine needs nothing from the parsers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gputui.fit.core.software import DEFAULT_SOFTWARE, Software
from gputui.fit.graph.network import Network
from gputui.fit.graph.runtime import LAYER_TABLE_SOURCE, Runtime

Optimizer = Literal["sgd", "momentum", "rmsprop", "adam", "adamw"]
Mode = Literal["train", "inference", "eval"]
Kind = Literal["sequential", "functional", "gan"]
OPTIMIZERS: tuple[Optimizer, ...] = ("sgd", "momentum", "rmsprop", "adam", "adamw")
MODES: tuple[Mode, ...] = ("train", "inference", "eval")
# Tensors of optimizer state per trainable parameter (PyTorch's defaults).
OPTIMIZER_STATES: dict[str, int] = {"sgd": 0, "momentum": 1, "rmsprop": 1, "adam": 2, "adamw": 2}


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    kind: Kind
    batch_size: int
    optimizer: Optimizer
    mode: Mode
    network: Network | None = None  # sequential, functional
    generator: Network | None = None  # gan
    discriminator: Network | None = None  # gan
    attention: str = "auto"
    # the precision the source asks for (a Keras mixed-precision policy), if any
    precision: str | None = None
    source_warnings: tuple[str, ...] = ()
    # how the framework runs it (layout, optimizer kernels): the speed estimate only
    software: Software = DEFAULT_SOFTWARE
    # which framework runs it (graph/runtime.py), and why that one was assumed
    runtime: Runtime = "pytorch"
    runtime_source: str = LAYER_TABLE_SOURCE

    @property
    def networks(self) -> tuple[Network, ...]:
        if self.network is not None:
            return (self.network,)
        assert self.generator is not None and self.discriminator is not None
        return (self.generator, self.discriminator)

    @property
    def params(self) -> int:
        return sum(n.params for n in self.networks)

    @property
    def trainable_params(self) -> int:
        return sum(n.trainable_params for n in self.networks)

    @property
    def flops(self) -> int:
        """Forward FLOPs per sample (for a GAN: generator plus discriminator)."""
        return sum(n.flops for n in self.networks)

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.source_warnings + tuple(w for n in self.networks for w in n.warnings)
