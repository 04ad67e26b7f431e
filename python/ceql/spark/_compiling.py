"""Queries compiled on the driver, before Spark plans anything: :func:`compile_on_driver`.

Both the batch and the stream entry points compile the query first so that its syntax errors
and warnings reach the caller at once, attributed to the caller's line, rather than surfacing
from a Python worker inside a Spark exception.
"""

from __future__ import annotations

import warnings

import ceql

__all__ = ["compile_on_driver"]


def compile_on_driver(text: str, stacklevel: int) -> ceql.Query:
    """``ceql.compile(text)``, its :class:`ceql.CeqlWarning`\\ s re-issued ``stacklevel``
    frames above this function (2: its caller's line)."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", ceql.CeqlWarning)
        q = ceql.compile(text)
    for w in said:
        warnings.warn(w.message, w.category, stacklevel=stacklevel)
    return q
