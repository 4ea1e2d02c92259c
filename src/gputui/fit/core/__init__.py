"""What every model kind shares: the breakdown, overheads, verdict, largest batch, the
target, precision and the timing model. Nothing here imports an engine (graph/, transformer/)."""
