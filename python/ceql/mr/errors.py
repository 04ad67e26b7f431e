"""The MATCH_RECOGNIZE engine's errors about the rows it is given (the query's own errors are
the front end's, :mod:`ceql.frontends.mr.errors`)."""

from __future__ import annotations

from ..errors import CeqlInputError

__all__ = ["MrValueError", "UnknownColumnError"]


class MrValueError(CeqlInputError):
    """Values that cannot be combined: a string compared with a number, a condition that gives
    a number, a time compared with an integer."""


class UnknownColumnError(CeqlInputError):
    """An expression names a column the input rows do not have."""
