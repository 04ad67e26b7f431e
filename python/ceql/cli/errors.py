"""Exit statuses of ``ceql`` and the failures that end a command with one."""

from __future__ import annotations

import ceql

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "CliError",
    "QueryError",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


class CliError(Exception):
    """A failure reported as one ``ceql: error: …`` line, ending the command with ``status``."""

    def __init__(self, message: str, status: int = EXIT_FAILURE) -> None:
        super().__init__(" ".join(message.split()))
        self.status = status


class QueryError(Exception):
    """A query that does not compile: reported in full (caret snippet included), exit 2."""

    def __init__(self, source: str, error: ceql.CeqlError) -> None:
        super().__init__(f"{source}: {error}")
