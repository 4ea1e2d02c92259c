"""What a run used: statistics over a stream of snapshots (a recording, or any sequence).

Streaming and bounded: a day at 1 s on 8 GPUs is read once, holding per GPU a
101-bin utilisation histogram, a few sums and a downsampled series for the plots, and
per process a few sums; nothing grows with the number of samples. Unknown values stay
unknown (None), never 0. Imports only `model/` and `core/` (docs/architecture.md).
"""
