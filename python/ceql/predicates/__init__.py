"""Atomic predicates and their 3-valued evaluation into per-event *class* integers.

Every distinct atom ``k`` of a query (a comparison, LIKE, IN, IN RANGE, or a structural
type/stream test) owns two bits of an event's class: bit ``2k`` = "atom is TRUE", bit
``2k+1`` = "atom is FALSE"; neither = UNKNOWN (SQL's 3-valued logic). Guards over atoms are
compiled by :func:`guard_fn` to functions of the class that hold only when TRUE.

:meth:`AtomTable.row_class` is the reference (plain Python, one event);
:meth:`AtomTable.batch_classes` evaluates each atom once per Arrow batch, column-wise, and gives
exactly the same integers. Value rules, shared by both paths:

* NULL: ``None``, a missing attribute / absent column, and float NaN (``NaN`` is NULL).
* Kinds: numbers (``int``/``float``, never ``bool``), strings, booleans, and the temporal kinds
  naive datetime, aware datetime, date, time, duration. Values compare only within one kind;
  anything else (bytes, lists, a string vs a number, naive vs aware datetimes) is UNKNOWN.
  ``Decimal`` becomes ``int`` when it has no fractional digits (exponent >= 0), else ``float``;
  numpy scalars become their Python values.
* Numbers compare exactly (``2**53 + 1 > 2.0**53``); strings by code point; ``False < True``.
* Arithmetic only on numbers, with Python's results (``/`` true division, ``%`` floor modulo);
  division or modulo by zero, overflow to a float error, or a NaN result is UNKNOWN.
* ``x IN {v1, v2}`` is ``x = v1 OR x = v2``: TRUE if ``x`` equals a literal, FALSE if not and
  every literal is of ``x``'s kind, else UNKNOWN (so ``x IN {1, 'a'}`` is never FALSE); an
  empty list is FALSE. ``NOT IN`` is the 3-valued negation. ``IN RANGE(lo, hi)`` is
  ``x >= lo AND x <= hi``.
* ``LIKE``: RE2 partial match on strings (through pyarrow, so linear time); a non-string is
  UNKNOWN. The row path caches results per distinct string, within a budget
  (``row.LIKE_CACHE_SIZE`` strings, ``row.LIKE_CACHE_CHARS`` characters).
* :class:`TypeIs` / :class:`StreamIs` are 2-valued: a NULL stream value matches every stream.

Column-wise, numbers go through numpy with exactness guards (int64 overflow, int/float ties,
big literals); strings through Arrow kernels (on the dictionary of a dictionary column, on an
``n x width`` byte matrix when all strings share one length). Whatever cannot be done exactly
that way (a uint64 above 2**63 - 1, an int64 overflow, ...) falls back, for that atom and batch,
to the row path on the batch's Python values, so both paths always agree.

Modules: :mod:`.values` (the value model), :mod:`.atoms` (atom types and identity),
:mod:`.row` (row path), :mod:`.arrow` (column path), :mod:`.table` (:class:`AtomTable`),
:mod:`.guards` (guard trees).
"""

from .atoms import FLIP, Atom, StreamIs, TypeIs
from .guards import (
    GAnd,
    GAtom,
    GNot,
    GOr,
    GTrue,
    GuardTree,
    GUnless,
    guard_fn,
    guard_from_pred,
    tri_state,
)
from .row import LIKE_CACHE_SIZE
from .table import AtomTable

__all__ = [
    "FLIP",
    "LIKE_CACHE_SIZE",
    "Atom",
    "AtomTable",
    "GAnd",
    "GAtom",
    "GNot",
    "GOr",
    "GTrue",
    "GUnless",
    "GuardTree",
    "StreamIs",
    "TypeIs",
    "guard_fn",
    "guard_from_pred",
    "tri_state",
]
