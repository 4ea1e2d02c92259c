"""Errors the user caused, reported as one line with a non-zero exit and no traceback."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: the message names the file, line or field. Exit code 2 by default."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
