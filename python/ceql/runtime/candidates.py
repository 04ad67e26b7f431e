"""What the chain engines (:mod:`~ceql.runtime.dense`, :mod:`~ceql.runtime.joins`) decide
on whole columns: the values conditions between events read, for a batch's rows and the rows
carried into it; conditions decided per candidate chain, as array comparisons where they
compare numbers (:func:`cond_mask`), else value by value exactly as the register runtime
decides them; and the matches of candidate chains built from columns."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from ..ir import nodes as N
from ..predicates.between import Listener
from ..predicates.values import TRUE, norm
from .dense_plan import Cond
from .match import Match
from .match_arrays import MatchArrays, MatchBlock, Shape, shapes_by_code
from .state import Evaluation
from .times import column

__all__ = ["EXACT", "Columns", "cond_holds", "cond_mask", "matches_of"]

_new = object.__new__
EXACT = 2 ** 53  #: integers up to this are exact as floats (so compare exactly with floats)


def cond_holds(c: Cond, vals: list[tuple[Any, ...]], hear: Listener | None) -> bool:
    """Whether condition ``c`` holds for every choice, the elements' values being ``vals``
    (``hear``: the evaluation's listener for values that never compare, if it listens)."""
    check = c.check
    slots = c.slots
    for choice in c.choices:
        recs = []
        for q, el in enumerate(choice):
            v = vals[el]
            recs.append(tuple(v[s] for s in slots[q]))
        if check(tuple(recs), (), hear) != TRUE:
            return False
    return True


class Columns:
    """The attributes conditions read, for the rows of a batch and the rows carried into it
    (rows ``0 .. nt - 1`` are carried, given as their values; ``nt + i`` is the batch's row
    ``idx[i]``; no batch: ``rb`` None and ``idx`` empty)."""

    def __init__(self, rb: pa.RecordBatch | None, idx: np.ndarray,
                 carried: list[tuple[Any, ...]], attrs: tuple[str, ...]) -> None:
        self.rb = rb
        self.idx = idx
        self.carried = carried
        self.nt = len(carried)
        self.attrs = attrs
        self._arrays: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}
        self._cols: dict[int, pa.Array | None] = {}
        self._lists: dict[int, list[Any]] = {}
        self._arrows: dict[int, pa.Array | None] = {}

    def _col(self, a: int) -> pa.Array | None:
        if a not in self._cols:
            col = None if self.rb is None else column(self.rb, self.attrs[a], None)
            if col is not None and pa.types.is_dictionary(col.type):
                col = col.dictionary_decode()
            self._cols[a] = col
        return self._cols[a]

    def python(self, rows: list[int]) -> list[tuple[Any, ...]]:
        """Normalized values of batch rows ``rows`` (indices into ``idx``), one tuple each."""
        if not self.attrs:
            return [()] * len(rows)
        if not rows:
            return []
        take = pa.array(self.idx[rows])
        per = []
        for a in range(len(self.attrs)):
            col = self._col(a)
            per.append([None] * len(rows) if col is None else
                       [norm(v) for v in col.take(take).to_pylist()])
        return list(zip(*per, strict=True))

    def column(self, a: int) -> list[Any]:
        """Normalized values of attribute ``a`` over all extended rows (carried ones first)."""
        got = self._lists.get(a)
        if got is None:
            got = [r[a] for r in self.carried]
            if self.idx.size:
                col = self._col(a)
                got += ([None] * int(self.idx.size) if col is None else
                        [norm(v) for v in col.take(pa.array(self.idx)).to_pylist()])
            self._lists[a] = got
        return got

    def arrow(self, a: int) -> pa.Array | None:
        """Attribute ``a`` over all extended rows as one Arrow array (None: the carried
        values do not fit the batch column's type, or rows fed one by one mix types)."""
        if a in self._arrows:
            return self._arrows[a]
        got: pa.Array | None = None
        try:
            if self.rb is None:
                got = pa.array(self.column(a))
            else:
                col = self._col(a)
                if col is not None:
                    sel = col.take(pa.array(self.idx))
                    got = sel if not self.nt else pa.concat_arrays([
                        pa.array([r[a] for r in self.carried], type=sel.type), sel])
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError,
                OverflowError):
            got = None
        self._arrows[a] = got
        return got

    def values(self, rows: np.ndarray) -> list[tuple[Any, ...]]:
        """Normalized values of extended rows ``rows`` (carried ones first), one tuple each."""
        nt = self.nt
        rl = rows.tolist()
        new = [r - nt for r in rl if r >= nt]
        got = iter(self.python(new))
        return [self.carried[r] if r < nt else next(got) for r in rl]

    def array(self, a: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Attribute ``a`` over the extended rows as numbers (floats, or integers where an
        integer beyond 2**53 makes floats inexact) and where they are valid; None when some
        value is not a number (or the integers are too large to compare with floats)."""
        if a in self._arrays:
            return self._arrays[a]
        got = self._array(a)
        self._arrays[a] = got
        return got

    def _array(self, a: int) -> tuple[np.ndarray, np.ndarray] | None:
        col = self._col(a)
        m = int(self.idx.size)
        if col is None or pa.types.is_null(col.type):
            vals = np.zeros(m, dtype=np.float64)
            valid = np.zeros(m, dtype=bool)
        else:
            t = col.type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t)) or t == pa.uint64():
                return None
            sel = col.take(pa.array(self.idx))
            valid = np.asarray(sel.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            if pa.types.is_floating(t):
                vals = np.asarray(sel.cast(pa.float64()).fill_null(0.0)
                                  .to_numpy(zero_copy_only=False), dtype=np.float64)
                valid &= ~np.isnan(vals)
            else:
                vals = np.asarray(sel.cast(pa.int64()).fill_null(0)
                                  .to_numpy(zero_copy_only=False), dtype=np.int64)
                if not vals.size or max(-int(vals.min()), int(vals.max())) <= EXACT:
                    vals = vals.astype(np.float64)  # exact: compares with floats as Python
        if self.nt:
            tv = [r[a] for r in self.carried]
            if any(v is not None and type(v) not in (int, float) for v in tv):
                return None
            tvalid = np.asarray([v is not None for v in tv], dtype=bool)
            big = any(type(v) is int and abs(v) > EXACT for v in tv)
            if big and vals.dtype.kind == "f":
                if valid.any() or any(type(v) is float for v in tv):
                    return None
                vals = vals.astype(np.int64)  # (no number in the batch: integers then)
            if vals.dtype.kind == "i":
                if any(type(v) is float or (type(v) is int and abs(v) >= 2 ** 63)
                       for v in tv):
                    return None
                tarr = np.asarray([0 if v is None else v for v in tv], dtype=np.int64)
            else:
                tarr = np.asarray([0.0 if v is None else v for v in tv], dtype=np.float64)
            vals = np.concatenate([tarr, vals])
            valid = np.concatenate([tvalid, valid])
        return vals, valid


def cond_mask(c: Cond, cols: Columns, rows_at: list[np.ndarray],
               hear: Listener | None) -> np.ndarray:
    """Per candidate (its elements' extended rows ``rows_at``): whether ``c`` holds."""
    if c.vector:
        got = _vector_mask(c, cols, rows_at)
        if got is not None:
            return got
    # value by value, as the register runtime decides it
    vals = [cols.values(r) for r in rows_at]
    n = rows_at[0].size
    return np.fromiter((cond_holds(c, [v[j] for v in vals], hear) for j in range(n)), dtype=bool,
                       count=n)


def _vector_mask(c: Cond, cols: Columns, rows_at: list[np.ndarray]) -> np.ndarray | None:
    """:func:`cond_mask` on arrays (None: a column is not numbers)."""
    qi = {v: i for i, v in enumerate(c.quantified)}
    ok = np.ones(rows_at[0].size, dtype=bool)
    for choice in c.choices:

        def operand(e: N.Expr, choice: tuple[int, ...] = choice) -> Any:
            if isinstance(e, N.Literal):
                return e.value
            assert isinstance(e, N.Attr)
            got = cols.array(cols.attrs.index(e.name))
            if got is None:
                raise _NotNumbers
            vals, valid = got
            r = rows_at[choice[qi[c.var if e.var is None else e.var]]]
            return vals[r], valid[r]

        try:
            t, _ = _tri(c.pred, operand)
        except _NotNumbers:
            return None
        ok &= t
    return ok


class _NotNumbers(Exception):
    """A column a condition reads is not numbers (or not exactly comparable as such)."""


def _tri(p: N.Pred, operand: Callable[[N.Expr], Any]) -> tuple[np.ndarray, np.ndarray]:
    """``p`` in 3-valued logic as two arrays: where it is TRUE, where it is FALSE."""
    if isinstance(p, N.PAnd):
        lt, lf = _tri(p.left, operand)
        rt, rf = _tri(p.right, operand)
        return lt & rt, lf | rf
    if isinstance(p, N.POr):
        lt, lf = _tri(p.left, operand)
        rt, rf = _tri(p.right, operand)
        return lt | rt, lf & rf
    if isinstance(p, N.PNot):
        t, f = _tri(p.operand, operand)
        return f, t
    assert isinstance(p, N.Compare)
    a, b = operand(p.left), operand(p.right)
    valid: Any = True
    if isinstance(a, tuple):
        a, va = a
        valid = va
    elif (type(a) is int and abs(a) > EXACT) or a != a:
        raise _NotNumbers  # (a NaN literal is NULL)
    if isinstance(b, tuple):
        b, vb = b
        valid = valid & vb
    elif (type(b) is int and abs(b) > EXACT) or b != b:
        raise _NotNumbers
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype != b.dtype:
        raise _NotNumbers  # integers beyond 2**53 against floats
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        raise _NotNumbers  # (two literals: left to Python)
    for x, y in ((a, b), (b, a)):
        if isinstance(x, np.ndarray) and x.dtype.kind == "i" and type(y) is float:
            raise _NotNumbers  # an integer column against a float: Python compares exactly
    op = p.op
    if op == "=" or op == "==":
        r = a == b
    elif op in ("!=", "<>"):
        r = a != b
    elif op == "<":
        r = a < b
    elif op == "<=":
        r = a <= b
    elif op == ">":
        r = a > b
    else:
        r = a >= b
    r = np.asarray(r, dtype=bool)
    return r & valid, ~r & valid


def matches_of(ev: Evaluation, starts: np.ndarray, start_t: Any, ends: np.ndarray,
               end_t: Any, codes: np.ndarray, rkeys: list[tuple[Any, ...]],
               marked: list[np.ndarray], labels: tuple[frozenset[str], ...],
               each: tuple[np.ndarray, Callable[[int], tuple[frozenset[str], ...]]] | None = None
               ) -> MatchBlock:
    """The matches of chains given as columns (start and end positions and time keys, each
    one's partition code into ``rkeys``, the positions of each marked element), in order;
    the variables of the marked elements are ``labels``, or each match's by a code of it
    (``each``: the codes and the labels of a code). The matches are arrays until someone
    reads them as objects (:class:`~ceql.runtime.match_arrays.MatchBlock`)."""
    n = int(starts.size)
    positions = (np.column_stack(marked) if marked else np.zeros((n, 0), np.int64)).astype(
        np.int64, copy=False)
    shapes = ((Shape(labels, np.arange(n, dtype=np.int64), positions),) if each is None
              else shapes_by_code(each[0], positions, each[1]))
    arrays = MatchArrays(np.asarray(starts, np.int64), np.asarray(ends, np.int64), shapes)

    def make() -> list[Match]:
        return _built(ev, starts.tolist(), _listed(start_t), ends.tolist(), _listed(end_t),
                      codes.tolist(), rkeys, [p.tolist() for p in marked], labels,
                      None if each is None else _each(*each))

    return MatchBlock(arrays, make)


def _each(codes: np.ndarray, labels_of: Callable[[int], tuple[frozenset[str], ...]]
          ) -> list[tuple[frozenset[str], ...]]:
    """The labels of each code (``labels_of`` asked once per distinct code)."""
    distinct, where = np.unique(codes, return_inverse=True)
    table = [labels_of(c) for c in distinct.tolist()]
    return list(map(table.__getitem__, where.reshape(-1).tolist()))


def _listed(x: Any) -> list[Any]:
    return x.tolist() if isinstance(x, np.ndarray) else list(x)


def _built(ev: Evaluation, starts: list[int], start_t: list[Any], ends: list[int],
           end_t: list[Any], codes: list[int], rkeys: list[tuple[Any, ...]],
           marked: list[list[int]], labels: tuple[frozenset[str], ...],
           each: list[tuple[frozenset[str], ...]] | None) -> list[Match]:
    """:func:`matches_of`'s matches as objects."""
    clock = ev.clock
    is_ts = clock.is_ts
    form = clock.form() if is_ts else None
    timed = bool(is_ts) or clock.time is not None
    if is_ts:
        value = clock.value
        end_t = [value(t) for t in end_t]
    out: list[Match] = []
    append = out.append
    M = Match
    new = _new
    # (matches of one end share its data, and of one start theirs: memory as the tECS's)
    last_ep = last_sp = -1
    end: tuple[Any, ...] = ()
    start: tuple[Any, ...] = ()
    starts_seen: dict[int, tuple[Any, ...]] = {}
    for sp, st, ep, et, code, ps in zip(starts, start_t, ends, end_t, codes,
                                        zip(*marked, strict=True) if marked
                                        else itertools.repeat(()), strict=False):
        mt = new(M)
        if sp != last_sp:
            start = starts_seen.get(sp) or starts_seen.setdefault(sp, (sp, sp, sp, None, st))
            last_sp = sp
        if ep != last_ep:
            end = (ep, et, rkeys[code], form, timed)
            last_ep = ep
            starts_seen.clear()
        mt._start = start
        mt._end = end
        mt.positions = ps
        mt._labels = labels
        append(mt)
    if each is not None:
        for mt, lab in zip(out, each, strict=True):
            mt._labels = lab
    return out
