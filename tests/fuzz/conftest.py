"""Bounded property tests over hostile input files; benchmarks/fuzz.py runs the long campaign."""

from __future__ import annotations

import sys
from pathlib import Path

# The generators are shared with benchmarks/fuzz.py, which imports them the same way.
sys.path.insert(0, str(Path(__file__).resolve().parent))
