"""The one package allowed to use Textual's private names, for the widgets redrawn every poll.

Each module here draws what Textual's own path would draw, cheaper, and has an
equivalence test that compares the two (tests/tui/test_fastpaint_*.py);
tests/tui/test_fastpaint_boundary.py fails when a module outside this package uses a
private Textual name. A Textual upgrade is checked here and nowhere else.
"""
