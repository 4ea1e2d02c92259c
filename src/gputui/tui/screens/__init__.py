"""Screens of the dashboard app: the dashboard itself, the kill dialog and help."""
