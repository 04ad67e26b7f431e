"""The column path: atoms evaluated once per Arrow record batch, giving one code per row.

Numbers go through numpy with exactness guards (int64 overflow, int/float ties, big literals);
strings through Arrow kernels (on the dictionary of a dictionary column, on an ``n x width``
byte matrix when all strings share one length). Whatever cannot be done exactly that way raises
:class:`Fallback`, and :func:`row_fallback` evaluates that atom on that batch with the row path,
so both paths always agree.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..ir import nodes as _ast
from .atoms import FLIP, Atom, StreamIs, TypeIs, attr_names, norm_op
from .programs import is_deep, stack_program
from .row import RowFn, compile_row_expr, like_matcher
from .values import (
    FALSE,
    K_BOOL,
    K_DATE,
    K_DT,
    K_DTZ,
    K_DUR,
    K_NUM,
    K_OTHER,
    K_STR,
    K_TIME,
    NOT3,
    PY_CMP,
    TIMES,
    TRUE,
    UNKNOWN,
    InSetSpec,
    arith,
    cmp3,
    kind,
    neg,
)

__all__ = [
    "BATCH_THREADS",
    "ENCODE_AT",
    "ENCODE_MIN_ROWS",
    "FIXED_MIN_ROWS",
    "PARALLEL_MIN_ROWS",
    "BatchAtom",
    "BatchContext",
    "Classes",
    "Codes",
    "Fallback",
    "assemble",
    "compile_batch_atom",
    "row_fallback",
    "string_weight",
]


def _threads() -> int:
    try:
        return max(1, int(os.environ.get("CEQL_BATCH_THREADS", "1")))
    except ValueError:
        return 1


# Tuning thresholds (tests lower them to send small batches down the paths for big ones).

#: Threads per string kernel over long plain columns (``CEQL_BATCH_THREADS``). One by default:
#: Spark already runs one worker per core, and on a busy machine extra threads only add wall time.
BATCH_THREADS = _threads()
#: Rows per slice below which threads do not pay off.
PARALLEL_MIN_ROWS = 1 << 18
#: Plain string columns shorter than this are never dictionary-encoded.
ENCODE_MIN_ROWS = 1 << 14
#: Scan weight of a column's string atoms from which it is dictionary-encoded (when of low
#: cardinality). Encoding costs about three string comparisons over the column; a LIKE about ten.
ENCODE_AT = 3
#: Columns shorter than this never take the fixed-width byte-matrix path.
FIXED_MIN_ROWS = 64

#: Per-row codes of one atom (0 unknown, 1 true, 2 false).
Codes = npt.NDArray[np.uint8]
#: Per-row classes: uint64, or Python ints (dtype object) past 32 atoms.
Classes = npt.NDArray[Any]
_Arr = npt.NDArray[Any]

# ---------------------------------------------------------------- batch values

class Fallback(Exception):
    """This atom cannot be evaluated exactly column-wise here; use the row path."""


# Batch kinds (the row kinds, plus numeric representations and NULL).
_B_NULL, _B_INT, _B_FLOAT, _B_BIG = -1, 10, 11, 12
_B_NUMERIC = frozenset({_B_INT, _B_FLOAT, _B_BIG})
_MOMENTS = frozenset({K_DT, K_DTZ, K_DATE, K_DUR})
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
        return _BV(K_BOOL, np.bool_(v), const=True, py=v)
    if type(v) is int:
        if _I64_MIN <= v <= _I64_MAX:
            return _BV(_B_INT, np.int64(v), const=True, py=v)
        return _BV(_B_BIG, None, const=True, py=v)
    if type(v) is float:
        return _BV(_B_FLOAT, np.float64(v), const=True, py=v)
    return _BV(kind(v), v, const=True, py=v)


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
    """Convert one Arrow column into a batch value (raises ``Fallback`` when not exact)."""
    t = arr.type
    if pa.types.is_dictionary(t):
        if _is_stringy(t.value_type):
            if pa.types.is_string_view(t.value_type):
                arr = arr.cast(pa.dictionary(t.index_type, pa.large_string()))
            return _BV(K_STR, arr)
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_null(t):
        return _NULL_BV
    if _is_stringy(t):
        return _BV(K_STR, arr.cast(pa.large_string()) if pa.types.is_string_view(t) else arr)
    if pa.types.is_boolean(t):
        return _BV(K_BOOL, np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False),
                                       np.bool_), _validity(arr))
    if pa.types.is_integer(t):
        try:
            arr = arr.cast(pa.int64())  # a uint64 above 2**63 - 1 raises: row path
        except pa.ArrowInvalid as exc:
            raise Fallback from exc
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
                raise Fallback from exc
        # The shortest exact text, parsed with correct rounding, equals float(Decimal).
        return _column_bv(arr.cast(pa.string()).cast(pa.float64()))
    if pa.types.is_timestamp(t):
        return _BV(K_DTZ if t.tz is not None else K_DT, arr)
    if pa.types.is_date(t):
        if pa.types.is_date64(t):
            try:
                arr = arr.cast(pa.date32())
            except pa.ArrowInvalid as exc:
                raise Fallback from exc
        return _BV(K_DATE, arr)
    if pa.types.is_time(t):
        return _BV(K_TIME, arr)
    if pa.types.is_duration(t):
        return _BV(K_DUR, arr)
    return _BV(K_OTHER, arr)


def _bv_valid(x: _BV) -> _Arr | None:
    if x.kind in (_B_INT, _B_FLOAT, K_BOOL):
        return x.valid
    return _validity(x.data)


# ---------------------------------------------------------------- codes

def _codes_np(res: Any, valid: _Arr | None, n: int) -> Codes:
    """Codes from a numpy boolean result and validity mask."""
    res = np.broadcast_to(np.asarray(res, np.bool_), (n,))
    codes: Codes = np.subtract(2, res.view(np.uint8), dtype=np.uint8)
    if valid is not None:
        codes *= valid.view(np.uint8)
    return codes


def _codes_arrow(res: Any) -> Codes:
    """Codes from an Arrow boolean array (NULL = unknown)."""
    if isinstance(res, pa.ChunkedArray):
        res = res.combine_chunks()
    n = len(res)
    if n == 0:
        return np.zeros(0, np.uint8)
    data = _bitmap(res.buffers()[1], res.offset, n)
    return _codes_np(data, _validity(res), n)


def _full(n: int, code: int) -> Codes:
    return np.full(n, code, np.uint8)


def _negate_codes(codes: Codes) -> Codes:
    out: Codes = np.asarray(np.array(NOT3, np.uint8)[codes], np.uint8)
    return out


def _and_codes(a: Codes, b: Codes) -> Codes:
    # FALSE (2) if either is FALSE; otherwise both are 0/1 and their minimum is the AND.
    out: Codes = np.where(np.maximum(a, b) == FALSE, np.uint8(FALSE), np.minimum(a, b))
    return out


# ---------------------------------------------------------------- string kernels

_pool: tuple[int, ThreadPoolExecutor] | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None or _pool[0] != os.getpid():  # a forked child needs its own threads
        _pool = (os.getpid(), ThreadPoolExecutor(BATCH_THREADS, thread_name_prefix="ceql"))
    return _pool[1]


def _str_codes(arr: Any, fn: Callable[[Any], Any]) -> Codes:
    """Codes of ``fn`` (plain string array -> Arrow booleans) over a string column.

    A dictionary column is evaluated on its dictionary once, then gathered by index; a long
    plain column is cut into slices evaluated in parallel (Arrow kernels release the GIL).
    """
    if pa.types.is_dictionary(arr.type):
        indices = arr.indices
        table = np.append(_codes_arrow(fn(arr.dictionary)), np.uint8(UNKNOWN))  # never empty
        out: Codes = np.take(table, indices.fill_null(0).to_numpy())
        valid = _validity(indices)
        if valid is not None:
            out *= valid.view(np.uint8)
        return out
    n = len(arr)
    k = min(BATCH_THREADS, n // PARALLEL_MIN_ROWS)
    if k <= 1:
        return _codes_arrow(fn(arr))
    step = -(-n // k)
    parts = _executor().map(lambda i: _codes_arrow(fn(arr.slice(i, step))), range(0, n, step))
    joined: Codes = np.concatenate(list(parts))
    return joined


def _low_cardinality(arr: Any) -> bool:
    """Whether a long plain string column looks worth dictionary-encoding (sampled)."""
    n = len(arr)
    if n < ENCODE_MIN_ROWS:
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

def _family(k: int) -> int:
    return K_NUM if k in _B_NUMERIC else k


def _b_compare(op: str, a: _BV, b: _BV, n: int) -> Codes:
    if a.kind == _B_NULL or b.kind == _B_NULL:
        return _full(n, UNKNOWN)
    if a.const and b.const:
        return _full(n, cmp3(op, a.py, b.py))
    fam = _family(a.kind)
    if fam != _family(b.kind):
        if _across(fam, _family(b.kind)):
            raise Fallback  # a duration and seconds, a time and ISO text: the row path's rules
        return _full(n, UNKNOWN)
    if fam == K_OTHER:
        return _full(n, UNKNOWN)
    if fam == K_NUM:
        res, valid = _num_cmp(op, a, b, n)
        return _codes_np(res, valid, n)
    if fam == K_BOOL:
        return _codes_np(_NP_CMP[op](a.data, b.data), _vand(a.valid, b.valid), n)
    if fam == K_STR:
        return _str_cmp(op, a, b)
    return _temporal_cmp(op, a.data, b.data)


def _across(fa: int, fb: int) -> bool:
    """Whether values of families ``fa`` and ``fb`` compare though they differ."""
    pair = {fa, fb}
    return pair == {K_DUR, K_NUM} or (K_STR in pair and bool(pair & TIMES))


def _str_cmp(op: str, a: _BV, b: _BV) -> Codes:
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


def _str_in_codes(arr: Any, lits: list[str]) -> Codes:
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
    if n < FIXED_MIN_ROWS or not (pa.types.is_string(arr.type)
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


def _temporal_cmp(op: str, x: Any, y: Any) -> Codes:
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
        pyop = PY_CMP[op]
        for i in idx.tolist():
            res[i] = pyop(int(x[i]), float(y[i]))
    return res


# ---------------------------------------------------------------- batch arithmetic

def _b_neg(a: _BV) -> _BV:
    if a.kind == _B_NULL:
        return _NULL_BV
    if a.const:
        return _const_bv(neg(a.py))
    if a.kind == K_DUR:
        raise Fallback
    if a.kind == _B_FLOAT:
        return _BV(_B_FLOAT, -a.data, a.valid)
    if a.kind != _B_INT:
        return _NULL_BV
    bad = a.data == _I64_MIN
    if a.valid is not None:
        bad &= a.valid
    if bad.any():
        raise Fallback
    return _BV(_B_INT, -a.data, a.valid)


def _any_valid(mask: Any, valid: _Arr | None) -> bool:
    if valid is not None:
        mask = mask & valid
    return bool(np.any(mask))


def _b_arith(op: str, a: _BV, b: _BV) -> _BV:
    if a.kind == _B_NULL or b.kind == _B_NULL:
        return _NULL_BV
    if a.const and b.const:
        return _const_bv(arith(op, a.py, b.py))
    if a.kind not in _B_NUMERIC or b.kind not in _B_NUMERIC:
        if a.kind in _MOMENTS or b.kind in _MOMENTS:
            raise Fallback  # times and durations: the row path's rules (values.time_arith)
        return _NULL_BV
    if _B_BIG in (a.kind, b.kind):
        raise Fallback
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
                raise Fallback
            return _BV(_B_INT, r, valid)
        if op == "/" and a.kind == b.kind == _B_INT:
            # Python's int / int is correctly rounded; float division matches only if exact.
            for v in (x, y):
                if _any_valid((v > _EXACT) | (v < -_EXACT), valid):
                    raise Fallback
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

class BatchContext:
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
        """The Arrow column ``name`` (the first of that name), ``None`` if absent."""
        i = self.index.get(name)
        return None if i is None else self.batch.column(i)

    def column(self, name: str) -> _BV:
        """Column ``name`` as a batch value (raises :class:`Fallback` when not exact)."""
        if name not in self._bvs:
            arr = self.raw(name)
            try:
                bv = _NULL_BV if arr is None else _column_bv(arr)
            except Fallback:
                bv = None
            if (bv is not None and bv.kind == K_STR and self.hints.get(name, 0) >= ENCODE_AT
                    and not pa.types.is_dictionary(bv.data.type) and _low_cardinality(bv.data)):
                bv = _BV(K_STR, bv.data.dictionary_encode())
            self._bvs[name] = bv
        bv = self._bvs[name]
        if bv is None:
            raise Fallback
        return bv

    def pylist(self, name: str) -> list[Any]:
        """Column ``name`` as Python values (all ``None`` if absent)."""
        arr = self.raw(name)
        if arr is None:
            return [None] * self.n
        out: list[Any] = arr.to_pylist()
        return out


def string_weight(atom: Atom) -> tuple[str | None, int]:
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


_BatchExpr = Callable[[BatchContext], _BV]
BatchAtom = Callable[[BatchContext], Codes]


def _compile_batch_expr(e: _ast.Expr) -> _BatchExpr:
    if is_deep(e):
        const = _attr_free(e)

        def leaf(node: _ast.Expr) -> _BatchExpr | None:
            if id(node) in const:
                bv = _const_bv(compile_row_expr(node)({}))
                return lambda ctx: bv
            if isinstance(node, _ast.Attr):
                name = node.name
                return lambda ctx: ctx.column(name)
            return None
        return stack_program(e, leaf, _b_neg, _b_arith)
    return _closure_batch_expr(e)


def _attr_free(e: _ast.Expr) -> set[int]:
    """The ids of the nodes of ``e`` that read no attribute (without recursion)."""
    free: set[int] = set()
    todo: list[tuple[_ast.Expr, bool]] = [(e, False)]
    while todo:
        node, ready = todo.pop()
        if isinstance(node, _ast.Neg):
            if not ready:
                todo += [(node, True), (node.operand, False)]
            elif id(node.operand) in free:
                free.add(id(node))
        elif isinstance(node, _ast.Arith):
            if not ready:
                todo += [(node, True), (node.right, False), (node.left, False)]
            elif id(node.left) in free and id(node.right) in free:
                free.add(id(node))
        elif not isinstance(node, _ast.Attr):
            free.add(id(node))
    return free


def _closure_batch_expr(e: _ast.Expr) -> _BatchExpr:
    if not attr_names(e):
        bv = _const_bv(compile_row_expr(e)({}))
        return lambda ctx: bv
    if isinstance(e, _ast.Attr):
        name = e.name
        return lambda ctx: ctx.column(name)
    if isinstance(e, _ast.Neg):
        f = _closure_batch_expr(e.operand)
        return lambda ctx: _b_neg(f(ctx))
    if isinstance(e, _ast.Arith):
        op, fl, fr = e.op, _closure_batch_expr(e.left), _closure_batch_expr(e.right)
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


def _b_inset(spec: InSetSpec, x: _BV, n: int) -> Codes:
    if spec.empty:
        return _full(n, FALSE)
    if x.kind == _B_NULL:
        return _full(n, UNKNOWN)
    if x.const:
        return _full(n, spec.row_code(x.py))
    fam = _family(x.kind)
    if fam in TIMES and spec.strs:
        raise Fallback  # a time among ISO 8601 texts: the row path's rules
    if fam == K_STR and spec.strs:
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
    elif x.kind == K_BOOL and spec.bools:
        codes = _codes_np(_isin_np(x.data, [np.bool_(v) for v in sorted(spec.bools)]),
                          x.valid, n)
    else:
        return _full(n, UNKNOWN)
    if spec.only != fam:
        codes &= np.uint8(TRUE)  # no match is not FALSE: some literal is of another kind
    return codes


def _integral_float(v: float) -> bool:
    return math.isfinite(v) and v.is_integer()


def _float_exact(k: int) -> bool:
    try:
        return float(k) == k
    except OverflowError:
        return False


def _b_like(pattern: str, x: _BV, n: int, row: Callable[[str], int]) -> Codes:
    if x.kind == _B_NULL:
        return _full(n, UNKNOWN)
    if x.const:
        return _full(n, row(x.py) if isinstance(x.py, str) else UNKNOWN)
    if x.kind != K_STR:
        return _full(n, UNKNOWN)
    return _str_codes(x.data, lambda arr: pc.match_substring_regex(arr, pattern=pattern))


def compile_batch_atom(atom: Atom, type_key: str, stream_key: str,
                       row_fn: RowFn) -> BatchAtom:
    """``atom`` as a function of a batch giving its codes; ``row_fn`` is its row path.

    The function raises :class:`Fallback` (or an Arrow error) where it cannot be exact.
    """
    if isinstance(atom, (TypeIs, StreamIs)):
        key = type_key if isinstance(atom, TypeIs) else stream_key
        name, is_stream = atom.name, isinstance(atom, StreamIs)

        def structural(ctx: BatchContext) -> Codes:
            x = ctx.column(key)
            if x.kind == K_STR:
                codes = _str_in_codes(x.data, [name])
                # NULL is no type, but every stream
                hit = codes != FALSE if is_stream else codes == TRUE
                return _codes_np(hit, None, ctx.n)
            if not is_stream:
                return _full(ctx.n, FALSE)
            valid = _bv_valid(x) if x.kind != _B_NULL else np.zeros(ctx.n, np.bool_)
            return _full(ctx.n, FALSE) if valid is None else _codes_np(~valid, None, ctx.n)
        return structural
    if not attr_names(atom):
        return lambda ctx: _full(ctx.n, row_fn({}))
    if isinstance(atom, _ast.Compare):
        op = norm_op(atom.op)
        fl, fr = _compile_batch_expr(atom.left), _compile_batch_expr(atom.right)
        return lambda ctx: _b_compare(op, fl(ctx), fr(ctx), ctx.n)
    if isinstance(atom, _ast.Like):
        fx, pattern = _compile_batch_expr(atom.expr), atom.pattern
        match = like_matcher(pattern)
        return lambda ctx: _b_like(pattern, fx(ctx), ctx.n, match)
    if isinstance(atom, _ast.InSet):
        fx, spec, negated = _compile_batch_expr(atom.expr), InSetSpec(atom.values), atom.negated

        def inset(ctx: BatchContext) -> Codes:
            codes = _b_inset(spec, fx(ctx), ctx.n)
            return _negate_codes(codes) if negated else codes
        return inset
    if isinstance(atom, _ast.InRange):
        fx, flo, fhi = (_compile_batch_expr(e) for e in (atom.expr, atom.lo, atom.hi))

        def in_range(ctx: BatchContext) -> Codes:
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


def row_fallback(ctx: BatchContext, row_fn: RowFn, names: tuple[str, ...]) -> Codes:
    """Evaluate one atom row by row (``row_fn``) on the batch's Python values of ``names``."""
    try:
        cols = [ctx.pylist(name) for name in names]
    except (pa.ArrowException, ValueError, OverflowError):  # values Python cannot hold
        return _full(ctx.n, UNKNOWN)
    it = (row_fn(dict(zip(names, vals, strict=True))) for vals in zip(*cols, strict=True))
    return np.fromiter(it, np.uint8, count=ctx.n)


def assemble(codes: list[Codes], n: int) -> Classes:
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
    result: Classes = blocks[0].astype(object)
    for i, block in enumerate(blocks[1:], 1):
        result = result | (block.astype(object) << (64 * i))
    return result
