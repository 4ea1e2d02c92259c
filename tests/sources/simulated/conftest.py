"""The scenario-file fixtures (tests/scenario_files.py) for this folder's tests."""

from tests.scenario_files import timeline, timeline_text, write_scenario

__all__ = ["timeline", "timeline_text", "write_scenario"]
