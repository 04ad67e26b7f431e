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
  UNKNOWN. The row path caches results per distinct string (LRU, ``LIKE_CACHE_SIZE``).
* :class:`TypeIs` / :class:`StreamIs` are 2-valued: a NULL stream value matches every stream.

Column-wise, numbers go through numpy with exactness guards (int64 overflow, int/float ties,
big literals); strings through Arrow kernels (on the dictionary of a dictionary column, on an
``n x width`` byte matrix when all strings share one length). Whatever cannot be done exactly
that way (a uint64 above 2**63 - 1, an int64 overflow, ...) falls back, for that atom and batch,
to the row path on the batch's Python values, so both paths always agree.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import functools
import math
import operator
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CeqlValidationError
from ..ir import nodes as _ast

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
    "GuardTree",
    "StreamIs",
    "TypeIs",
    "guard_fn",
    "guard_from_pred",
    "tri_state",
]

LIKE_CACHE_SIZE = 65_536


# ---------------------------------------------------------------- atoms and guards

@dataclass(frozen=True)
class TypeIs:
    """The event's type value equals ``name`` (never UNKNOWN)."""

    name: str


@dataclass(frozen=True)
class StreamIs:
    """The event's stream value equals ``name`` or is NULL/missing (never UNKNOWN)."""

    name: str


Atom = _ast.Compare | _ast.Like | _ast.InSet | _ast.InRange | TypeIs | StreamIs


@dataclass(frozen=True)
class GAtom:
    """Atom ``k`` of an :class:`AtomTable`."""

    k: int


@dataclass(frozen=True)
class GAnd:
    items: tuple[GuardTree, ...]


@dataclass(frozen=True)
class GOr:
    items: tuple[GuardTree, ...]


@dataclass(frozen=True)
class GNot:
    item: GuardTree


@dataclass(frozen=True)
class GTrue:
    pass


GuardTree = GAtom | GAnd | GOr | GNot | GTrue

# Per-atom result codes: 0 unknown, 1 true, 2 false; ``code << 2k`` sets the atom's bit.
_U, _T, _F = 0, 1, 2

_Arr = npt.NDArray[Any]
_Codes = npt.NDArray[np.uint8]
_RowFn = Callable[[Mapping[str, Any]], int]
_ValFn = Callable[[Mapping[str, Any]], Any]


# ---------------------------------------------------------------- value model (rows)

_K_OTHER, _K_NUM, _K_STR, _K_BOOL = 0, 1, 2, 3
_K_DT, _K_DTZ, _K_DATE, _K_TIME, _K_TIMETZ, _K_DUR = 4, 5, 6, 7, 8, 9
_TEMPORAL = frozenset({_K_DT, _K_DTZ, _K_DATE, _K_TIME, _K_TIMETZ, _K_DUR})

_KIND_BY_TYPE: dict[type, int] = {
    int: _K_NUM, float: _K_NUM, str: _K_STR, bool: _K_BOOL,
    _dt.date: _K_DATE, _dt.timedelta: _K_DUR,
}


def _kind(v: Any) -> int:
    """Kind of a normalized, non-NULL value."""
    k = _KIND_BY_TYPE.get(type(v))
    if k is not None:
        return k
    if isinstance(v, bool):
        return _K_BOOL
    if isinstance(v, (int, float)):
        return _K_NUM
    if isinstance(v, str):
        return _K_STR
    if isinstance(v, _dt.datetime):  # before date: datetime subclasses date
        return _K_DTZ if v.utcoffset() is not None else _K_DT
    if isinstance(v, _dt.date):
        return _K_DATE
    if isinstance(v, _dt.time):
        return _K_TIMETZ if v.utcoffset() is not None else _K_TIME
    if isinstance(v, _dt.timedelta):
        return _K_DUR
    return _K_OTHER


def _norm(v: Any) -> Any:
    """Map a raw attribute value into the value model (``None`` = NULL)."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return v
    if t is float:
        return None if v != v else v
    return _norm_slow(v)


def _norm_slow(v: Any) -> Any:
    if isinstance(v, (np.datetime64, np.timedelta64)):
        item = v.item()
        return item if isinstance(item, (_dt.date, _dt.timedelta)) else v
    if isinstance(v, np.generic):
        return _norm(v.item())
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return None if v != v else float(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, decimal.Decimal):
        if not v.is_finite():
            return None if v.is_nan() else float(v)
        exp = v.as_tuple().exponent
        return int(v) if isinstance(exp, int) and exp >= 0 else float(v)
    return v


def _is_num(v: Any) -> bool:
    t = type(v)
    return t is int or t is float


_PY_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
#: The comparison with its operands swapped: ``a op b`` is ``b FLIP[op] a``.
FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_OP_ALIASES = {"==": "=", "<>": "!="}

_PY_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "/": operator.truediv, "%": operator.mod,
}


def _cmp3(op: str, a: Any, b: Any) -> int:
    """3-valued comparison of two normalized values, as a code."""
    if a is None or b is None:
        return _U
    ka = _kind(a)
    if ka != _kind(b) or ka == _K_OTHER:
        return _U
    if ka in _TEMPORAL:
        try:
            r = _PY_CMP[op](a, b)
        except TypeError:
            return _U
    else:
        r = _PY_CMP[op](a, b)
    return _T if r else _F


def _arith_py(op: str, a: Any, b: Any) -> Any:
    if not (_is_num(a) and _is_num(b)):
        return None
    try:
        r = _PY_ARITH[op](a, b)
    except (ZeroDivisionError, OverflowError):
        return None
    if type(r) is float and r != r:
        return None
    return r


def _neg_py(a: Any) -> Any:
    return -a if _is_num(a) else None


def _and3(a: int, b: int) -> int:
    if a == _F or b == _F:
        return _F
    return _T if a == _T and b == _T else _U


_NEG_CODE = (_U, _F, _T)


# ---------------------------------------------------------------- structural keys

def _key(node: Any) -> Any:
    """Structural identity: like AST equality, but ``1``, ``1.0`` and ``TRUE`` differ."""
    if isinstance(node, _ast.Literal):
        v = node.value
        return ("lit", type(v).__name__, repr(v) if isinstance(v, float) else v)
    if isinstance(node, _ast.Attr):
        return ("attr", node.name)
    if isinstance(node, _ast.Neg):
        return ("neg", _key(node.operand))
    if isinstance(node, _ast.Arith):
        return ("arith", node.op, _key(node.left), _key(node.right))
    if isinstance(node, _ast.Compare):
        return ("cmp", _OP_ALIASES.get(node.op, node.op), _key(node.left), _key(node.right))
    if isinstance(node, _ast.Like):
        return ("like", _key(node.expr), node.pattern)
    if isinstance(node, _ast.InSet):
        return ("in", node.negated, _key(node.expr), tuple(_key(v) for v in node.values))
    if isinstance(node, _ast.InRange):
        return ("range", _key(node.expr), _key(node.lo), _key(node.hi))
    if isinstance(node, TypeIs):
        return ("type", node.name)
    if isinstance(node, StreamIs):
        return ("stream", node.name)
    raise TypeError(f"not a predicate atom or expression: {node!r}")


def _attrs(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, _ast.Attr):
        out.add(node.name)
    elif isinstance(node, _ast.Neg):
        _attrs(node.operand, out)
    elif isinstance(node, (_ast.Arith, _ast.Compare)):
        _attrs(node.left, out)
        _attrs(node.right, out)
    elif isinstance(node, (_ast.Like, _ast.InSet)):
        _attrs(node.expr, out)
    elif isinstance(node, _ast.InRange):
        for e in (node.expr, node.lo, node.hi):
            _attrs(e, out)
    return out


# ---------------------------------------------------------------- row compilation

def _compile_row_expr(e: _ast.Expr) -> _ValFn:
    """A closure giving the normalized value of ``e`` on an event (``None`` = NULL)."""
    if isinstance(e, _ast.Attr):
        name = e.name

        def attr(ev: Mapping[str, Any]) -> Any:
            v = ev.get(name)
            t = type(v)
            if t is str or t is int or v is None:
                return v
            if t is float:
                return v if v == v else None
            return _norm_slow(v)
        return attr
    if isinstance(e, _ast.Literal):
        c = _norm(e.value)
        return lambda ev: c
    if isinstance(e, _ast.Neg):
        f = _compile_row_expr(e.operand)

        def neg(ev: Mapping[str, Any]) -> Any:
            a = f(ev)
            t = type(a)
            return -a if t is int or t is float else None
        return neg
    if isinstance(e, _ast.Arith):
        pyop = _PY_ARITH.get(e.op)
        if pyop is None:
            raise ValueError(f"unknown arithmetic operator {e.op!r}")
        fl, fr = _compile_row_expr(e.left), _compile_row_expr(e.right)

        def arith(ev: Mapping[str, Any]) -> Any:
            a, b = fl(ev), fr(ev)
            ta, tb = type(a), type(b)
            if (ta is int or ta is float) and (tb is int or tb is float):
                try:
                    r = pyop(a, b)
                except (ZeroDivisionError, OverflowError):
                    return None
                return r if r == r else None  # NaN (e.g. inf - inf) is NULL
            return None
        return arith
    raise TypeError(f"not an expression: {e!r}")


def _compile_row_compare(op: str, left: _ast.Expr, right: _ast.Expr) -> _RowFn:
    if isinstance(right, _ast.Attr) and isinstance(left, _ast.Literal):
        op, left, right = FLIP[op], right, left
    pyop = _PY_CMP[op]
    if isinstance(left, _ast.Attr) and isinstance(right, _ast.Literal):
        name, lit = left.name, _norm(right.value)
        if type(lit) is str:
            def cmp_str(ev: Mapping[str, Any]) -> int:
                v = ev.get(name)
                if type(v) is str:
                    return _T if pyop(v, lit) else _F
                return _cmp3(op, _norm(v), lit)
            return cmp_str
        if type(lit) is int or type(lit) is float:
            def cmp_num(ev: Mapping[str, Any]) -> int:
                v = ev.get(name)
                t = type(v)
                if t is int or t is float:
                    if v != v:
                        return _U
                    return _T if pyop(v, lit) else _F
                return _cmp3(op, _norm(v), lit)
            return cmp_num
    fl, fr = _compile_row_expr(left), _compile_row_expr(right)

    def compare(ev: Mapping[str, Any]) -> int:
        a, b = fl(ev), fr(ev)
        t = type(a)
        if t is type(b) and (t is int or t is float or t is str):
            return _T if pyop(a, b) else _F
        return _cmp3(op, a, b)
    return compare


class _InSetSpec:
    """The literals of an IN list, split by kind.

    ``x IN {v1, ..}`` is ``x = v1 OR ..`` in 3-valued logic: FALSE needs every literal to be
    non-NULL and of ``x``'s kind; an empty list is FALSE even for a NULL ``x``.
    """

    def __init__(self, values: tuple[_ast.Literal, ...]) -> None:
        vals = [_norm(v.value) for v in values]
        self.empty = not values
        self.nums = frozenset(v for v in vals if _is_num(v))
        self.strs = frozenset(v for v in vals if type(v) is str)
        self.bools = frozenset(v for v in vals if type(v) is bool)
        kinds = {None if v is None else _kind(v) for v in vals}
        self.only: int | None = kinds.pop() if len(kinds) == 1 else None

    def row_code(self, x: Any) -> int:
        if type(x) is str and not self.empty:
            return _T if x in self.strs else _F if self.only == _K_STR else _U
        if self.empty:
            return _F
        if x is None:
            return _U
        k = _kind(x)
        s = self.nums if k == _K_NUM else self.strs if k == _K_STR else (
            self.bools if k == _K_BOOL else None)
        if s and x in s:
            return _T
        return _F if self.only == k else _U


def _regex_row_matcher(pattern: str) -> Callable[[str], int]:
    @functools.lru_cache(maxsize=LIKE_CACHE_SIZE)
    def match(s: str) -> int:
        try:
            r = pc.match_substring_regex(pa.array([s], pa.string()), pattern=pattern)
        except (UnicodeError, pa.ArrowException):  # e.g. lone surrogates: not Arrow text
            return _U
        return _T if r[0].as_py() else _F
    return match


def _compile_row_atom(atom: Atom, type_key: str, stream_key: str) -> _RowFn:
    if isinstance(atom, TypeIs):
        name = atom.name
        return lambda ev: _T if ev.get(type_key) == name else _F
    if isinstance(atom, StreamIs):
        name = atom.name

        def stream(ev: Mapping[str, Any]) -> int:
            v = ev.get(stream_key)
            if v is None or v == name:
                return _T
            return _T if _norm(v) is None else _F  # NaN is NULL too
        return stream
    if isinstance(atom, _ast.Compare):
        return _compile_row_compare(_norm_op(atom.op), atom.left, atom.right)
    if isinstance(atom, _ast.Like):
        fx, match = _compile_row_expr(atom.expr), _regex_row_matcher(atom.pattern)

        def like(ev: Mapping[str, Any]) -> int:
            x = fx(ev)
            return match(x) if isinstance(x, str) else _U
        return like
    if isinstance(atom, _ast.InSet):
        fx, spec = _compile_row_expr(atom.expr), _InSetSpec(atom.values)
        code_of = spec.row_code
        if atom.negated:
            return lambda ev: _NEG_CODE[code_of(fx(ev))]
        return lambda ev: code_of(fx(ev))
    if isinstance(atom, _ast.InRange):
        fx, flo, fhi = (_compile_row_expr(e) for e in (atom.expr, atom.lo, atom.hi))

        def in_range(ev: Mapping[str, Any]) -> int:
            x, lo, hi = fx(ev), flo(ev), fhi(ev)
            if type(x) in _NUM_TYPES and type(lo) in _NUM_TYPES and type(hi) in _NUM_TYPES:
                return _T if lo <= x <= hi else _F
            return _and3(_cmp3(">=", x, lo), _cmp3("<=", x, hi))
        return in_range
    raise TypeError(f"not a predicate atom: {atom!r}")


_NUM_TYPES = frozenset({int, float})


def _norm_op(op: str) -> str:
    op = _OP_ALIASES.get(op, op)
    if op not in _PY_CMP:
        raise ValueError(f"unknown comparison operator {op!r}")
    return op


# ---------------------------------------------------------------- batch values

class _Fallback(Exception):
    """This atom cannot be evaluated exactly column-wise here; use the row path."""


# Batch kinds (the row kinds, plus numeric representations and NULL).
_B_NULL, _B_INT, _B_FLOAT, _B_BIG = -1, 10, 11, 12
_B_NUMERIC = frozenset({_B_INT, _B_FLOAT, _B_BIG})
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_EXACT = 2**53
_FLOAT_MAX = float.fromhex("0x1.fffffffffffffp+1023")


@dataclass(slots=True)
class _BV:
    """A column-wise value: numpy data + validity for numbers/booleans, Arrow arrays otherwise.

    ``valid`` is ``None`` when every row is valid. A constant keeps its Python value in ``py``
    (and a numpy scalar in ``data`` for numbers/booleans).
    """

    kind: int
    data: Any = None
    valid: _Arr | None = None
    const: bool = False
    py: Any = None


_NULL_BV = _BV(_B_NULL, const=True)
_NULL_BOOL = pa.scalar(None, pa.bool_())


def _const_bv(v: Any) -> _BV:
    if v is None:
        return _NULL_BV
    if type(v) is bool:
        return _BV(_K_BOOL, np.bool_(v), const=True, py=v)
    if type(v) is int:
        if _I64_MIN <= v <= _I64_MAX:
            return _BV(_B_INT, np.int64(v), const=True, py=v)
        return _BV(_B_BIG, None, const=True, py=v)
    if type(v) is float:
        return _BV(_B_FLOAT, np.float64(v), const=True, py=v)
    return _BV(_kind(v), v, const=True, py=v)


def _vand(a: _Arr | None, b: _Arr | None) -> _Arr | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _bitmap(buf: Any, offset: int, n: int) -> _Arr:
    bits = np.unpackbits(np.frombuffer(buf, np.uint8), count=offset + n, bitorder="little")
    return bits[offset:].view(np.bool_)


def _validity(arr: Any) -> _Arr | None:
    """Validity of an Arrow array as a numpy bool mask, ``None`` when there is no NULL."""
    if arr.null_count == 0:
        return None
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), np.bool_)
    buf = arr.buffers()[0]
    if buf is None:
        return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.bool_)
    return _bitmap(buf, arr.offset, len(arr))


def _is_stringy(t: Any) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_string_view(t))


def _column_bv(arr: Any) -> _BV:
    """Convert one Arrow column into a batch value (raises ``_Fallback`` when not exact)."""
    t = arr.type
    if pa.types.is_dictionary(t):
        if _is_stringy(t.value_type):
            if pa.types.is_string_view(t.value_type):
                arr = arr.cast(pa.dictionary(t.index_type, pa.large_string()))
            return _BV(_K_STR, arr)
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_null(t):
        return _NULL_BV
    if _is_stringy(t):
        return _BV(_K_STR, arr.cast(pa.large_string()) if pa.types.is_string_view(t) else arr)
    if pa.types.is_boolean(t):
        return _BV(_K_BOOL, np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False),
                                       np.bool_), _validity(arr))
    if pa.types.is_integer(t):
        try:
            arr = arr.cast(pa.int64())  # a uint64 above 2**63 - 1 raises: row path
        except pa.ArrowInvalid as exc:
            raise _Fallback from exc
        return _BV(_B_INT, arr.fill_null(0).to_numpy(), _validity(arr))
    if pa.types.is_floating(t):
        valid = _validity(arr)
        vals = arr.cast(pa.float64()).fill_null(0.0).to_numpy()
        nan = np.isnan(vals)
        if nan.any():
            valid = _vand(valid, ~nan)
        return _BV(_B_FLOAT, vals, valid)
    if pa.types.is_decimal(t):
        if t.scale <= 0:
            try:
                return _column_bv(arr.cast(pa.int64()))
            except pa.ArrowInvalid as exc:
                raise _Fallback from exc
        # The shortest exact text, parsed with correct rounding, equals float(Decimal).
        return _column_bv(arr.cast(pa.string()).cast(pa.float64()))
    if pa.types.is_timestamp(t):
        return _BV(_K_DTZ if t.tz is not None else _K_DT, arr)
    if pa.types.is_date(t):
        if pa.types.is_date64(t):
            try:
                arr = arr.cast(pa.date32())
            except pa.ArrowInvalid as exc:
                raise _Fallback from exc
        return _BV(_K_DATE, arr)
    if pa.types.is_time(t):
        return _BV(_K_TIME, arr)
    if pa.types.is_duration(t):
        return _BV(_K_DUR, arr)
    return _BV(_K_OTHER, arr)


def _bv_valid(x: _BV) -> _Arr | None:
    if x.kind in (_B_INT, _B_FLOAT, _K_BOOL):
        return x.valid
    return _validity(x.data)


# ---------------------------------------------------------------- codes

def _codes_np(res: Any, valid: _Arr | None, n: int) -> _Codes:
    """Codes from a numpy boolean result and validity mask."""
    res = np.broadcast_to(np.asarray(res, np.bool_), (n,))
    codes: _Codes = np.subtract(2, res.view(np.uint8), dtype=np.uint8)
    if valid is not None:
        codes *= valid.view(np.uint8)
    return codes


def _codes_arrow(res: Any) -> _Codes:
    """Codes from an Arrow boolean array (NULL = unknown)."""
    if isinstance(res, pa.ChunkedArray):
        res = res.combine_chunks()
    n = len(res)
    if n == 0:
        return np.zeros(0, np.uint8)
    data = _bitmap(res.buffers()[1], res.offset, n)
    return _codes_np(data, _validity(res), n)


def _full(n: int, code: int) -> _Codes:
    return np.full(n, code, np.uint8)


def _negate_codes(codes: _Codes) -> _Codes:
    out: _Codes = np.asarray(np.array(_NEG_CODE, np.uint8)[codes], np.uint8)
    return out


def _and_codes(a: _Codes, b: _Codes) -> _Codes:
    # FALSE (2) if either is FALSE; otherwise both are 0/1 and their minimum is the AND.
    out: _Codes = np.where(np.maximum(a, b) == _F, np.uint8(_F), np.minimum(a, b))
    return out


def _threads() -> int:
    try:
        return max(1, int(os.environ.get("CEQL_BATCH_THREADS", "1")))
    except ValueError:
        return 1


# Threads per string kernel over long plain columns. One by default: Spark already runs one
# worker per core, and on a busy machine extra threads only add wall time.
BATCH_THREADS = _threads()
_PAR_MIN = 1 << 18  # rows per slice below which threads do not pay off
_ENCODE_MIN_ROWS = 1 << 14
_FIXED_MIN_ROWS = 64
_pool: tuple[int, ThreadPoolExecutor] | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None or _pool[0] != os.getpid():  # a forked child needs its own threads
        _pool = (os.getpid(), ThreadPoolExecutor(BATCH_THREADS, thread_name_prefix="ceql"))
    return _pool[1]


def _str_codes(arr: Any, fn: Callable[[Any], Any]) -> _Codes:
    """Codes of ``fn`` (plain string array -> Arrow booleans) over a string column.

    A dictionary column is evaluated on its dictionary once, then gathered by index; a long
    plain column is cut into slices evaluated in parallel (Arrow kernels release the GIL).
    """
    if pa.types.is_dictionary(arr.type):
        indices = arr.indices
        table = np.append(_codes_arrow(fn(arr.dictionary)), np.uint8(_U))  # never empty
        out: _Codes = np.take(table, indices.fill_null(0).to_numpy())
        valid = _validity(indices)
        if valid is not None:
            out *= valid.view(np.uint8)
        return out
    n = len(arr)
    k = min(BATCH_THREADS, n // _PAR_MIN)
    if k <= 1:
        return _codes_arrow(fn(arr))
    step = -(-n // k)
    parts = _executor().map(lambda i: _codes_arrow(fn(arr.slice(i, step))), range(0, n, step))
    joined: _Codes = np.concatenate(list(parts))
    return joined


def _low_cardinality(arr: Any) -> bool:
    """Whether a long plain string column looks worth dictionary-encoding (sampled)."""
    n = len(arr)
    if n < _ENCODE_MIN_ROWS:
        return False
    sample = arr.take(pa.array(np.arange(0, n, max(1, n // 4096))))
    return bool(pc.count_distinct(sample).as_py() <= 256)


_PC_CMP: dict[str, Callable[..., Any]] = {
    "=": pc.equal, "!=": pc.not_equal, "<": pc.less,
    "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal,
}
_NP_CMP: dict[str, Callable[..., Any]] = {
    "=": np.equal, "!=": np.not_equal, "<": np.less,
    "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
}


# ---------------------------------------------------------------- batch comparisons

def _family(kind: int) -> int:
    return _K_NUM if kind in _B_NUMERIC else kind


def _b_compare(op: str, a: _BV, b: _BV, n: int) -> _Codes:
    if a.kind == _B_NULL or b.kind == _B_NULL:
        return _full(n, _U)
    if a.const and b.const:
        return _full(n, _cmp3(op, a.py, b.py))
    fam = _family(a.kind)
    if fam != _family(b.kind) or fam == _K_OTHER:
        return _full(n, _U)
    if fam == _K_NUM:
        res, valid = _num_cmp(op, a, b, n)
        return _codes_np(res, valid, n)
    if fam == _K_BOOL:
        return _codes_np(_NP_CMP[op](a.data, b.data), _vand(a.valid, b.valid), n)
    if fam == _K_STR:
        return _str_cmp(op, a, b)
    return _temporal_cmp(op, a.data, b.data)


def _str_cmp(op: str, a: _BV, b: _BV) -> _Codes:
    if a.const:
        op, a, b = FLIP[op], b, a
    fn = _PC_CMP[op]
    if b.const:
        lit = b.py
        if op in ("=", "!="):
            codes = _str_in_codes(a.data, [lit])
            return _negate_codes(codes) if op == "!=" else codes
        return _str_codes(a.data, lambda arr: fn(arr, pa.scalar(lit, arr.type)))
    x, y = (_decoded(v.data) for v in (a, b))
    if x.type != y.type:
        x, y = x.cast(pa.large_string()), y.cast(pa.large_string())
    return _codes_arrow(fn(x, y))


def _str_in_codes(arr: Any, lits: list[str]) -> _Codes:
    """Codes of ``arr IN lits`` (``=`` for one literal) over a string column; NULL unknown."""
    if not pa.types.is_dictionary(arr.type):
        fixed = _fixed_width_in(arr, lits)
        if fixed is not None:
            return _codes_np(fixed, _validity(arr), len(arr))
    if len(lits) > 4:
        value_set = pa.array(lits, pa.large_string())
        return _str_codes(arr, lambda a: pc.if_else(
            pc.is_valid(a), pc.is_in(a, value_set=value_set.cast(a.type)), _NULL_BOOL))

    def equal_any(a: Any) -> Any:
        # Arrow rejects a length mismatch before comparing bytes: a few equalities beat hashing.
        res = pc.equal(a, pa.scalar(lits[0], a.type))
        for lit in lits[1:]:
            res = pc.or_(res, pc.equal(a, pa.scalar(lit, a.type)))
        return res
    return _str_codes(arr, equal_any)


def _fixed_width_in(arr: Any, lits: list[str]) -> _Arr | None:
    """``arr IN lits`` as a numpy mask when every string of ``arr`` has one byte length.

    Such a column's text is an ``n x L`` byte matrix, compared without touching offsets per row.
    Returns ``None`` when the column is not of that shape.
    """
    n = len(arr)
    if n < _FIXED_MIN_ROWS or not (pa.types.is_string(arr.type)
                                   or pa.types.is_large_string(arr.type)):
        return None
    bufs = arr.buffers()
    off_type = np.int32 if pa.types.is_string(arr.type) else np.int64
    offsets = np.frombuffer(bufs[1], off_type)[arr.offset:arr.offset + n + 1]
    start, total = int(offsets[0]), int(offsets[-1] - offsets[0])
    width = total // n
    if width * n != total:
        return None
    lens = np.diff(offsets)
    if width == 0 or not bool((lens == width).all()):
        return None
    data = np.frombuffer(bufs[2], np.uint8)[start:start + total]
    keys = [b for b in (lit.encode() for lit in lits) if len(b) == width]
    if not keys:
        return np.zeros(n, np.bool_)
    if width in (1, 2, 4, 8):
        words = data.view(f"<u{width}")
        res: _Arr = words == np.frombuffer(keys[0], f"<u{width}")[0]
        for key in keys[1:]:
            res |= words == np.frombuffer(key, f"<u{width}")[0]
        return res
    matrix = data.reshape(n, width)
    res = (matrix == np.frombuffer(keys[0], np.uint8)).all(axis=1)
    for key in keys[1:]:
        res |= (matrix == np.frombuffer(key, np.uint8)).all(axis=1)
    return res


def _decoded(arr: Any) -> Any:
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


_UNITS = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def _temporal_cmp(op: str, x: Any, y: Any) -> _Codes:
    tx, ty = x.type, y.type
    if tx != ty:
        if pa.types.is_timestamp(tx) or pa.types.is_duration(tx) or pa.types.is_time(tx):
            unit = max(tx.unit, ty.unit, key=_UNITS.__getitem__)
            if pa.types.is_timestamp(tx):
                target = pa.timestamp(unit, "UTC" if tx.tz is not None else None)
            elif pa.types.is_duration(tx):
                target = pa.duration(unit)
            else:
                target = pa.time64(unit) if unit in ("us", "ns") else pa.time32(unit)
            x, y = x.cast(target), y.cast(target)
    return _codes_arrow(_PC_CMP[op](x, y))


def _num_cmp(op: str, a: _BV, b: _BV, n: int) -> tuple[Any, _Arr | None]:
    valid = _vand(a.valid, b.valid)
    if a.const:
        op, a, b = FLIP[op], b, a
    if b.const:
        if a.kind == _B_INT:
            if b.kind == _B_FLOAT:
                return _int_vs_float_const(op, a.data, b.py, n), valid
            return _int_vs_int_const(op, a.data, b.py, n), valid
        if b.kind == _B_FLOAT:
            return _NP_CMP[op](a.data, b.data), valid
        return _float_vs_int_const(op, a.data, b.py, n), valid
    if a.kind == b.kind:
        return _NP_CMP[op](a.data, b.data), valid
    if a.kind == _B_INT:
        return _int_vs_float_arrays(op, a.data, b.data, valid), valid
    return _int_vs_float_arrays(FLIP[op], b.data, a.data, valid), valid


def _const_cmp(op: str, below: bool) -> bool:
    """Result of ``x op k`` when every ``x`` is below ``k`` (or above, if not ``below``)."""
    return op in (("<", "<=", "!=") if below else (">", ">=", "!="))


def _int_vs_int_const(op: str, x: _Arr, k: int, n: int) -> Any:
    if _I64_MIN <= k <= _I64_MAX:
        return _NP_CMP[op](x, np.int64(k))
    return np.full(n, _const_cmp(op, k > 0))


def _int_vs_float_const(op: str, x: _Arr, f: float, n: int) -> Any:
    if math.isinf(f):
        return np.full(n, _const_cmp(op, f > 0))
    if f.is_integer():
        return _int_vs_int_const(op, x, int(f), n)
    if op in ("=", "!="):
        return np.full(n, op == "!=")
    if op in ("<", "<="):
        return _int_vs_int_const("<=", x, math.floor(f), n)
    return _int_vs_int_const(">=", x, math.ceil(f), n)


def _float_vs_int_const(op: str, x: _Arr, k: int, n: int) -> Any:
    try:
        fk: float | None = float(k)
    except OverflowError:
        fk = None
    if fk is not None and fk == k:
        return _NP_CMP[op](x, np.float64(fk))
    # k falls strictly between two adjacent doubles lo < k < hi.
    if fk is None:
        lo, hi = (_FLOAT_MAX, math.inf) if k > 0 else (-math.inf, -_FLOAT_MAX)
    elif fk > k:
        lo, hi = math.nextafter(fk, -math.inf), fk
    else:
        lo, hi = fk, math.nextafter(fk, math.inf)
    if op in ("=", "!="):
        return np.full(n, op == "!=")
    if op in ("<", "<="):
        return np.less_equal(x, np.float64(lo))
    return np.greater_equal(x, np.float64(hi))



def _int_vs_float_arrays(op: str, x: _Arr, y: _Arr, valid: _Arr | None) -> Any:
    """Exact ``int64 op float64``: compare as floats, then redo rounding ties in Python."""
    c = x.astype(np.float64)
    res = _NP_CMP[op](c, y)
    amb = (c == y) & ((x > _EXACT) | (x < -_EXACT))
    if valid is not None:
        amb &= valid
    idx = np.flatnonzero(amb)
    if idx.size:
        pyop = _PY_CMP[op]
        for i in idx.tolist():
            res[i] = pyop(int(x[i]), float(y[i]))
    return res


# ---------------------------------------------------------------- batch arithmetic

def _b_neg(a: _BV) -> _BV:
    if a.kind == _B_NULL:
        return _NULL_BV
    if a.const:
        return _const_bv(_neg_py(a.py))
    if a.kind == _B_FLOAT:
        return _BV(_B_FLOAT, -a.data, a.valid)
    if a.kind != _B_INT:
        return _NULL_BV
    bad = a.data == _I64_MIN
    if a.valid is not None:
        bad &= a.valid
    if bad.any():
        raise _Fallback
    return _BV(_B_INT, -a.data, a.valid)


def _any_valid(mask: Any, valid: _Arr | None) -> bool:
    if valid is not None:
        mask = mask & valid
    return bool(np.any(mask))


def _b_arith(op: str, a: _BV, b: _BV) -> _BV:
    if a.kind == _B_NULL or b.kind == _B_NULL:
        return _NULL_BV
    if a.const and b.const:
        return _const_bv(_arith_py(op, a.py, b.py))
    if a.kind not in _B_NUMERIC or b.kind not in _B_NUMERIC:
        return _NULL_BV
    if _B_BIG in (a.kind, b.kind):
        raise _Fallback
    if b.const and op in ("/", "%") and b.py == 0:
        return _NULL_BV
    valid = _vand(a.valid, b.valid)
    x, y = a.data, b.data
    with np.errstate(all="ignore"):
        if a.kind == b.kind == _B_INT and op != "/":
            if op == "%":
                if not b.const:
                    zero = y == 0
                    valid = _vand(valid, ~zero)
                    y = np.where(zero, np.int64(1), y)
                return _BV(_B_INT, np.remainder(x, y), valid)
            if op == "*":
                r = x * y
                ovf = np.abs(np.multiply(x, y, dtype=np.float64)) >= 2.0**62
            elif op == "+":
                r = x + y
                ovf = ((x ^ r) & (y ^ r)) < 0
            else:
                r = x - y
                ovf = ((x ^ y) & (x ^ r)) < 0
            if _any_valid(ovf, valid):
                raise _Fallback
            return _BV(_B_INT, r, valid)
        if op == "/" and a.kind == b.kind == _B_INT:
            # Python's int / int is correctly rounded; float division matches only if exact.
            for v in (x, y):
                if _any_valid((v > _EXACT) | (v < -_EXACT), valid):
                    raise _Fallback
        fx = x.astype(np.float64) if a.kind == _B_INT else x
        fy = y.astype(np.float64) if b.kind == _B_INT else y
        if op in ("/", "%") and not b.const:
            zero = fy == 0
            valid = _vand(valid, ~zero)
            fy = np.where(zero, 1.0, fy)
        if op == "+":
            r = fx + fy
        elif op == "-":
            r = fx - fy
        elif op == "*":
            r = fx * fy
        elif op == "/":
            r = fx / fy
        else:
            r = np.remainder(fx, fy)
        nan = np.isnan(r)
        if nan.any():
            valid = _vand(valid, ~nan)
    return _BV(_B_FLOAT, r, valid)


# ---------------------------------------------------------------- batch compilation

class _Ctx:
    """One batch being classified: its columns, converted once each."""

    def __init__(self, batch: Any, hints: Mapping[str, int] | None = None) -> None:
        self.batch = batch
        self.hints = hints or {}
        self.n: int = batch.num_rows
        self.index: dict[str, int] = {}
        for i, name in enumerate(batch.schema.names):
            self.index.setdefault(name, i)
        self._bvs: dict[str, _BV | None] = {}

    def raw(self, name: str) -> Any:
        i = self.index.get(name)
        return None if i is None else self.batch.column(i)

    def column(self, name: str) -> _BV:
        if name not in self._bvs:
            arr = self.raw(name)
            try:
                bv = _NULL_BV if arr is None else _column_bv(arr)
            except _Fallback:
                bv = None
            if (bv is not None and bv.kind == _K_STR and self.hints.get(name, 0) >= _ENCODE_AT
                    and not pa.types.is_dictionary(bv.data.type) and _low_cardinality(bv.data)):
                bv = _BV(_K_STR, bv.data.dictionary_encode())
            self._bvs[name] = bv
        bv = self._bvs[name]
        if bv is None:
            raise _Fallback
        return bv

    def pylist(self, name: str) -> list[Any]:
        arr = self.raw(name)
        if arr is None:
            return [None] * self.n
        out: list[Any] = arr.to_pylist()
        return out


_RAISE_UNEXPECTED = False  # tests set it to see column-path bugs instead of their fallback

# Dictionary-encoding a column costs about three string comparisons over it; a LIKE about ten.
_ENCODE_AT = 3


def _string_weight(atom: Atom) -> tuple[str | None, int]:
    """The column a string atom scans directly, and the weight of that scan."""
    if isinstance(atom, _ast.Compare):
        left, right = atom.left, atom.right
        if isinstance(left, _ast.Literal):
            left, right = right, left
        if isinstance(left, _ast.Attr) and isinstance(right, _ast.Literal) and isinstance(
                right.value, str):
            return left.name, 1
    elif isinstance(atom, _ast.Like) and isinstance(atom.expr, _ast.Attr):
        return atom.expr.name, 10
    elif isinstance(atom, _ast.InSet) and isinstance(atom.expr, _ast.Attr):
        return atom.expr.name, 2
    return None, 0


_BatchExpr = Callable[[_Ctx], _BV]
_BatchAtom = Callable[[_Ctx], _Codes]


def _compile_batch_expr(e: _ast.Expr) -> _BatchExpr:
    if not _attrs(e, set()):
        bv = _const_bv(_compile_row_expr(e)({}))
        return lambda ctx: bv
    if isinstance(e, _ast.Attr):
        name = e.name
        return lambda ctx: ctx.column(name)
    if isinstance(e, _ast.Neg):
        f = _compile_batch_expr(e.operand)
        return lambda ctx: _b_neg(f(ctx))
    if isinstance(e, _ast.Arith):
        op, fl, fr = e.op, _compile_batch_expr(e.left), _compile_batch_expr(e.right)
        return lambda ctx: _b_arith(op, fl(ctx), fr(ctx))
    raise TypeError(f"not an expression: {e!r}")


def _isin_np(x: Any, cands: Sequence[Any]) -> Any:
    if not cands:
        return False
    if len(cands) <= 8:
        res = x == cands[0]
        for c in cands[1:]:
            res = res | (x == c)
        return res
    return np.isin(x, np.array(cands))


def _b_inset(spec: _InSetSpec, x: _BV, n: int) -> _Codes:
    if spec.empty:
        return _full(n, _F)
    if x.kind == _B_NULL:
        return _full(n, _U)
    if x.const:
        return _full(n, spec.row_code(x.py))
    fam = _family(x.kind)
    if fam == _K_STR and spec.strs:
        codes = _str_in_codes(x.data, sorted(spec.strs))
    elif x.kind == _B_INT and spec.nums:
        ints = {int(v) for v in spec.nums if type(v) is int or _integral_float(v)}
        cands = [np.int64(v) for v in sorted(ints) if _I64_MIN <= v <= _I64_MAX]
        codes = _codes_np(_isin_np(x.data, cands), x.valid, n)
    elif x.kind == _B_FLOAT and spec.nums:
        fl = {float(v) for v in spec.nums if type(v) is float or _float_exact(v)}
        # + 0.0 folds -0.0 into 0.0 so that hashing/sorting cannot separate them.
        fcands = [np.float64(v + 0.0) for v in sorted(fl)]
        codes = _codes_np(_isin_np(x.data + 0.0, fcands), x.valid, n)
    elif x.kind == _K_BOOL and spec.bools:
        codes = _codes_np(_isin_np(x.data, [np.bool_(v) for v in sorted(spec.bools)]),
                          x.valid, n)
    else:
        return _full(n, _U)
    if spec.only != fam:
        codes &= np.uint8(_T)  # no match is not FALSE: some literal is of another kind
    return codes


def _integral_float(v: float) -> bool:
    return math.isfinite(v) and v.is_integer()


def _float_exact(k: int) -> bool:
    try:
        return float(k) == k
    except OverflowError:
        return False


def _b_like(pattern: str, x: _BV, n: int, row: Callable[[str], int]) -> _Codes:
    if x.kind == _B_NULL:
        return _full(n, _U)
    if x.const:
        return _full(n, row(x.py) if isinstance(x.py, str) else _U)
    if x.kind != _K_STR:
        return _full(n, _U)
    return _str_codes(x.data, lambda arr: pc.match_substring_regex(arr, pattern=pattern))


def _compile_batch_atom(atom: Atom, type_key: str, stream_key: str,
                        row_fn: _RowFn) -> _BatchAtom:
    if isinstance(atom, (TypeIs, StreamIs)):
        key = type_key if isinstance(atom, TypeIs) else stream_key
        name, is_stream = atom.name, isinstance(atom, StreamIs)

        def structural(ctx: _Ctx) -> _Codes:
            x = ctx.column(key)
            if x.kind == _K_STR:
                codes = _str_in_codes(x.data, [name])
                # NULL is no type, but every stream
                hit = codes != _F if is_stream else codes == _T
                return _codes_np(hit, None, ctx.n)
            if not is_stream:
                return _full(ctx.n, _F)
            valid = _bv_valid(x) if x.kind != _B_NULL else np.zeros(ctx.n, np.bool_)
            return _full(ctx.n, _F) if valid is None else _codes_np(~valid, None, ctx.n)
        return structural
    if not _attrs(atom, set()):
        return lambda ctx: _full(ctx.n, row_fn({}))
    if isinstance(atom, _ast.Compare):
        op = _norm_op(atom.op)
        fl, fr = _compile_batch_expr(atom.left), _compile_batch_expr(atom.right)
        return lambda ctx: _b_compare(op, fl(ctx), fr(ctx), ctx.n)
    if isinstance(atom, _ast.Like):
        fx, pattern = _compile_batch_expr(atom.expr), atom.pattern
        match = _regex_row_matcher(pattern)
        return lambda ctx: _b_like(pattern, fx(ctx), ctx.n, match)
    if isinstance(atom, _ast.InSet):
        fx, spec, negated = _compile_batch_expr(atom.expr), _InSetSpec(atom.values), atom.negated

        def inset(ctx: _Ctx) -> _Codes:
            codes = _b_inset(spec, fx(ctx), ctx.n)
            return _negate_codes(codes) if negated else codes
        return inset
    if isinstance(atom, _ast.InRange):
        fx, flo, fhi = (_compile_batch_expr(e) for e in (atom.expr, atom.lo, atom.hi))

        def in_range(ctx: _Ctx) -> _Codes:
            x, lo, hi = fx(ctx), flo(ctx), fhi(ctx)
            if (not x.const and x.kind in _B_NUMERIC and lo.const and hi.const
                    and lo.kind in _B_NUMERIC and hi.kind in _B_NUMERIC):
                # both bounds known: one mask, one validity
                ge, valid = _num_cmp(">=", x, lo, ctx.n)
                le, _ = _num_cmp("<=", x, hi, ctx.n)
                return _codes_np(np.logical_and(ge, le), valid, ctx.n)
            return _and_codes(_b_compare(">=", x, lo, ctx.n), _b_compare("<=", x, hi, ctx.n))
        return in_range
    raise TypeError(f"not a predicate atom: {atom!r}")


def _fallback_codes(ctx: _Ctx, row_fn: _RowFn, names: tuple[str, ...]) -> _Codes:
    """Evaluate one atom row by row on the batch's Python values."""
    try:
        cols = [ctx.pylist(name) for name in names]
    except (pa.ArrowException, ValueError, OverflowError):  # values Python cannot hold
        return _full(ctx.n, _U)
    it = (row_fn(dict(zip(names, vals, strict=True))) for vals in zip(*cols, strict=True))
    return np.fromiter(it, np.uint8, count=ctx.n)


def _assemble(codes: list[_Codes], n: int) -> _Arr:
    """Pack per-atom codes into class integers (uint64, or Python ints past 32 atoms)."""
    blocks = []
    for b0 in range(0, max(len(codes), 1), 32):
        out = np.zeros(n, np.uint64)
        for g0 in range(b0, min(b0 + 32, len(codes)), 4):
            group = codes[g0]  # four atoms = one byte, combined while still uint8
            for j in range(1, min(4, len(codes) - g0)):
                group = group | (codes[g0 + j] << np.uint8(2 * j))
            if g0 == b0 and len(codes) - b0 <= 4:
                out = group.astype(np.uint64)
            else:
                out |= group.astype(np.uint64) << np.uint64(2 * (g0 - b0))
        blocks.append(out)
    if len(codes) <= 32:
        return blocks[0]
    result: _Arr = blocks[0].astype(object)
    for i, block in enumerate(blocks[1:], 1):
        result = result | (block.astype(object) << (64 * i))
    return result


# ---------------------------------------------------------------- the table

class AtomTable:
    """The atoms of one query, in index order, with their row and batch evaluators."""

    def __init__(self, *, type_key: str = "type", stream_key: str = "stream") -> None:
        self.type_key = type_key
        self.stream_key = stream_key
        self._atoms: list[Atom] = []
        self._index: dict[Any, int] = {}
        self._row_fns: list[_RowFn] = []
        self._batch_fns: list[_BatchAtom] = []
        self._attr_names: list[tuple[str, ...]] = []
        self._row_class: Callable[[Mapping[str, Any]], int] | None = None
        self._hints: dict[str, int] = {}

    @property
    def atoms(self) -> tuple[Atom, ...]:
        return tuple(self._atoms)

    def __len__(self) -> int:
        return len(self._atoms)

    def add(self, atom: Atom) -> int:
        """Register ``atom`` (deduplicated structurally, spans ignored); return its index."""
        key = _key(atom)
        k = self._index.get(key)
        if k is not None:
            return k
        if isinstance(atom, _ast.Like):
            _check_regex(atom)
        row_fn = _compile_row_atom(atom, self.type_key, self.stream_key)
        batch_fn = _compile_batch_atom(atom, self.type_key, self.stream_key, row_fn)
        k = len(self._atoms)
        self._atoms.append(atom)
        self._index[key] = k
        self._row_fns.append(row_fn)
        self._batch_fns.append(batch_fn)
        names = _attrs(atom, set())
        if isinstance(atom, (TypeIs, StreamIs)):
            names.add(self.type_key if isinstance(atom, TypeIs) else self.stream_key)
        self._attr_names.append(tuple(sorted(names)))
        col, weight = _string_weight(atom)
        if isinstance(atom, (TypeIs, StreamIs)):
            col, weight = (self.type_key if isinstance(atom, TypeIs) else self.stream_key), 1
        if col is not None:
            self._hints[col] = self._hints.get(col, 0) + weight
        self._row_class = None
        return k

    def row_class(self, event: Mapping[str, Any]) -> int:
        """The class of one event (a mapping; missing keys are NULL)."""
        fn = self._row_class
        if fn is None:
            fn = self._row_class = self._compile_row_class()
        return fn(event)

    def _compile_row_class(self) -> Callable[[Mapping[str, Any]], int]:
        if not self._row_fns:
            return lambda ev: 0
        names = {f"f{k}": f for k, f in enumerate(self._row_fns)}
        body = " | ".join(f"f{k}(ev) << {2 * k}" for k in range(len(self._row_fns)))
        fn: Callable[[Mapping[str, Any]], int] = eval(f"lambda ev: {body}", names)
        return fn

    def atom_codes(self, k: int, batch: Any) -> _Codes:
        """Codes (0 unknown, 1 true, 2 false) of atom ``k`` over one record batch."""
        return self._batch_atom(k, _Ctx(batch, self._hints))

    def _batch_atom(self, k: int, ctx: _Ctx) -> _Codes:
        try:
            return self._batch_fns[k](ctx)
        except (_Fallback, pa.ArrowException):
            pass
        except Exception:
            # The row path is the reference: a column-path failure costs speed, not results.
            if _RAISE_UNEXPECTED:
                raise
        return _fallback_codes(ctx, self._row_fns[k], self._attr_names[k])

    def batch_classes(self, batch: Any) -> _Arr:
        """One class per row of a ``pa.RecordBatch`` or ``pa.Table``."""
        if isinstance(batch, pa.Table):
            parts = [self.batch_classes(b) for b in batch.to_batches()]
            if parts:
                return np.concatenate(parts) if len(parts) > 1 else parts[0]
            dtype = np.uint64 if 2 * len(self._atoms) <= 64 else object
            return np.zeros(0, dtype)
        ctx = _Ctx(batch, self._hints)
        codes = [self._batch_atom(k, ctx) for k in range(len(self._atoms))]
        return _assemble(codes, ctx.n)


def _check_regex(atom: _ast.Like) -> None:
    try:
        pc.match_substring_regex(pa.array([""], pa.string()), pattern=atom.pattern)
    except pa.ArrowInvalid as exc:
        span = atom.span
        raise CeqlValidationError(
            f"invalid regular expression {atom.pattern!r} in LIKE: {exc}",
            line=span.line, column=span.column) from exc


# ---------------------------------------------------------------- guards

def guard_from_pred(pred: _ast.Pred, table: AtomTable) -> GuardTree:
    """Register the atoms of ``pred`` in ``table`` and return the guard over them.

    Nested ANDs (ORs) become one flat :class:`GAnd` (:class:`GOr`); atoms are added in
    left-to-right order. Iterative, so long chains of conditions do not hit Python's recursion
    limit.
    """
    done: list[GuardTree] = []
    todo: list[tuple[Any, bool]] = [(pred, False)]
    while todo:
        node, ready = todo.pop()
        if isinstance(node, (_ast.PAnd, _ast.POr, _ast.PNot)):
            if not ready:
                todo.append((node, True))
                todo.extend((c, False) for c in reversed(_pred_children(node)))
                continue
            if isinstance(node, _ast.PNot):
                done.append(GNot(done.pop()))
                continue
            right, left = done.pop(), done.pop()
            cls = GAnd if isinstance(node, _ast.PAnd) else GOr
            items: list[GuardTree] = []
            for it in (left, right):
                items.extend(it.items if isinstance(it, cls) else (it,))
            done.append(cls(tuple(items)))
        else:
            done.append(GAtom(table.add(node)))
    return done[0]


def _pred_children(node: _ast.PAnd | _ast.POr | _ast.PNot) -> tuple[_ast.Pred, ...]:
    return (node.operand,) if isinstance(node, _ast.PNot) else (node.left, node.right)


def _guard_children(tree: GuardTree) -> tuple[GuardTree, ...]:
    if isinstance(tree, (GAnd, GOr)):
        return tree.items
    return (tree.item,) if isinstance(tree, GNot) else ()


def _depth(tree: GuardTree) -> int:
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, d = todo.pop()
        deepest = max(deepest, d)
        todo.extend((c, d + 1) for c in _guard_children(node))
    return deepest


def _guard_src(tree: GuardTree, false: bool) -> str:
    """Python source over ``c`` that is truthy iff ``tree`` is TRUE (or FALSE, if ``false``)."""
    if isinstance(tree, GAtom):
        return f"(c & {1 << (2 * tree.k + int(false))})"
    if isinstance(tree, GNot):
        return _guard_src(tree.item, not false)
    if isinstance(tree, GTrue):
        return "False" if false else "True"
    if isinstance(tree, (GAnd, GOr)):
        conj = isinstance(tree, GAnd) != false  # TRUE of AND / FALSE of OR: all items
        if not tree.items:
            return "True" if conj else "False"
        parts = [_guard_src(it, false) for it in tree.items]
        return "(" + (" and " if conj else " or ").join(parts) + ")"
    raise TypeError(f"not a guard: {tree!r}")


# A guard as a postfix program: ("a", k) atom, ("t", 0) TRUE, ("n", 0) NOT, ("&"|"|", arity).
_Program = list[tuple[str, int]]


def _postfix(tree: GuardTree) -> _Program:
    prog: _Program = []
    todo: list[tuple[GuardTree, bool]] = [(tree, False)]
    while todo:
        node, ready = todo.pop()
        if isinstance(node, GAtom):
            prog.append(("a", node.k))
        elif isinstance(node, GTrue):
            prog.append(("t", 0))
        elif not isinstance(node, (GNot, GAnd, GOr)):
            raise TypeError(f"not a guard: {node!r}")
        elif ready:
            prog.append(("n", 0) if isinstance(node, GNot) else (
                "&" if isinstance(node, GAnd) else "|", len(node.items)))
        else:
            todo.append((node, True))
            todo.extend((c, False) for c in reversed(_guard_children(node)))
    return prog


def _run(prog: _Program, cls: int) -> int:
    """Evaluate a postfix guard on a class; the result is a code (0 unknown, 1 true, 2 false)."""
    stack: list[int] = []
    for op, arg in prog:
        if op == "a":
            stack.append(cls >> (2 * arg) & 3)
        elif op == "t":
            stack.append(_T)
        elif op == "n":
            stack.append(_NEG_CODE[stack.pop()])
        else:
            vals = stack[len(stack) - arg:]
            del stack[len(stack) - arg:]
            decisive, default = (_F, _T) if op == "&" else (_T, _F)
            stack.append(decisive if decisive in vals else _U if _U in vals else default)
    return stack[0]


def tri_state(tree: GuardTree, cls: int) -> bool | None:
    """3-valued value of ``tree`` on a class: True, False or None (unknown)."""
    code = _run(_postfix(tree), cls)
    return None if code == _U else code == _T


def guard_fn(tree: GuardTree) -> Callable[[int], bool]:
    """Compile ``tree`` to a function of the class that holds iff the guard is TRUE."""
    if _depth(tree) > 50:  # the Python parser limits nesting; run a postfix program instead
        prog = _postfix(tree)
        return lambda c: _run(prog, c) == _T
    fn: Callable[[int], bool] = eval(f"lambda c: bool({_guard_src(tree, False)})")
    return fn
