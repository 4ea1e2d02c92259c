"""Text and JSON of fit results, for every model kind: shared by the CLI and the TUI.

- document: the one `fit --json` document (SCHEMA_VERSION, docs/fit.md)
- ranking_text / ranking_json: every kind's ranking, one table and one row shape
- graph_facts / graph_json / graph_text: a layer model's facts, JSON parts and text
- transformer_json / transformer_text: a transformer's (its model and workload facts
  are gputui.fit.transformer.report's, the lines the TUI shows too)
- targets: a GPU as JSON and as the line heading its estimates

The names below are the ones the TUI reads; sizes and counts are gputui.fit.units'.
"""

from gputui.fit.report.graph_facts import network_layers, speed_assumes
from gputui.fit.report.graph_text import bound_text
from gputui.fit.report.ranking_text import bound_cell, throughput_cell, throughput_label
from gputui.fit.units import batch_text, flops_text, gib

__all__ = [
    "batch_text",
    "bound_cell",
    "bound_text",
    "flops_text",
    "gib",
    "network_layers",
    "speed_assumes",
    "throughput_cell",
    "throughput_label",
]
