"""Textual-free rows and facts the screens and widgets draw."""
