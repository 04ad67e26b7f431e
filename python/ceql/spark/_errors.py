"""The error the Spark layer raises for a wrong MATCH_CEQL call or unusable input."""

from __future__ import annotations

from ceql import CeqlError

__all__ = ["MatchCeqlError"]


class MatchCeqlError(CeqlError):
    """A MATCH_CEQL call, its options or its input rows cannot be used as given."""
