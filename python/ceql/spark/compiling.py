"""Queries compiled on the driver, before Spark plans anything: :func:`compile_on_driver`.

Both the batch and the stream entry points compile the query first so that its syntax errors
and warnings reach the caller at once, attributed to the caller's line, rather than surfacing
from a Python worker inside a Spark exception.
"""

from __future__ import annotations

import warnings
from typing import Any

import ceql

__all__ = ["compile_on_driver"]


def compile_on_driver(text: str, stacklevel: int, schema: Any = None) -> ceql.Query:
    """``ceql.compile(text)``, its :class:`ceql.CeqlWarning`\\ s re-issued ``stacklevel``
    frames above this function (2: its caller's line). With the input's ``schema``, the
    warnings only a schema shows too (text columns compared in order); its errors are left to
    the planner, which says them in Spark's words."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", ceql.CeqlWarning)
        q = ceql.compile(text)
        if schema is not None:
            try:
                ceql.compile(text, schema=schema)
            except ceql.CeqlError:
                pass
    shown: set[tuple[type[Warning], str]] = set()
    for w in said:
        key = (w.category, str(w.message))
        if key not in shown:
            shown.add(key)
            warnings.warn(w.message, w.category, stacklevel=stacklevel)
    return q
