"""What every model kind shares: precision, overheads, verdicts, ranking, the timing model."""
