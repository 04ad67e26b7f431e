"""The row path: an atom compiled to a function of one event (a mapping), giving its code.

This is the reference semantics; the column path (:mod:`.arrow`) must agree with it exactly.
The closures test ``type(v)`` for the common ``str``/``int``/``float`` cases before falling back
to the general value model, because they run once per event and atom.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CeqlValidationError
from ..ir import nodes as _ast
from .atoms import FLIP, Atom, StreamIs, TypeIs, norm_op
from .programs import is_deep, stack_program
from .values import (
    FALSE,
    NOT3,
    PY_ARITH,
    PY_CMP,
    TRUE,
    UNKNOWN,
    InSetSpec,
    and3,
    cmp3,
    norm,
    norm_slow,
    time_arith,
)
from .values import neg as neg_value

__all__ = [
    "LIKE_CACHE_CHARS",
    "LIKE_CACHE_SIZE",
    "LikeMatcher",
    "RowFn",
    "check_regex",
    "compile_row_atom",
    "compile_row_expr",
    "like_matcher",
]

#: Entries of the per-pattern cache of LIKE results on the row path (read at compile time).
LIKE_CACHE_SIZE = 16_384
#: Characters of the strings that cache keeps, in all (read at compile time); a string longer
#: than 1/64 of it is matched every time it is met.
LIKE_CACHE_CHARS = 1 << 20

#: An atom on one event: its code.
RowFn = Callable[[Mapping[str, Any]], int]
_ValFn = Callable[[Mapping[str, Any]], Any]
_NUM_TYPES = frozenset({int, float})


def compile_row_expr(e: _ast.Expr) -> _ValFn:
    """A closure giving the normalized value of ``e`` on an event (``None`` = NULL)."""
    if is_deep(e):
        return stack_program(e, _row_leaf, _neg_value, _arith_value)
    return _closure_expr(e)


def _row_leaf(e: _ast.Expr) -> _ValFn | None:
    return _closure_expr(e) if isinstance(e, _ast.Attr | _ast.Literal) else None


def _neg_value(a: Any) -> Any:
    t = type(a)
    if t is int or t is float:
        return -a
    return None if a is None or t is str else neg_value(a)


def _arith_value(op: str, a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if (ta is int or ta is float) and (tb is int or tb is float):
        try:
            r = PY_ARITH[op](a, b)
        except (ZeroDivisionError, OverflowError):
            return None
        return r if r == r else None
    if a is None or b is None or ta is str or tb is str:
        return None
    return time_arith(op, a, b)


def _closure_expr(e: _ast.Expr) -> _ValFn:
    # one closure per level; neg and arith inline _neg_value and _arith_value (speed)
    if isinstance(e, _ast.Attr):
        name = e.name

        def attr(ev: Mapping[str, Any]) -> Any:
            v = ev.get(name)
            t = type(v)
            if t is str or t is int or v is None:
                return v
            if t is float:
                return v if v == v else None
            return norm_slow(v)
        return attr
    if isinstance(e, _ast.Literal):
        c = norm(e.value)
        return lambda ev: c
    if isinstance(e, _ast.Neg):
        f = _closure_expr(e.operand)

        def neg(ev: Mapping[str, Any]) -> Any:
            a = f(ev)
            t = type(a)
            if t is int or t is float:
                return -a
            return None if a is None or t is str else neg_value(a)
        return neg
    if isinstance(e, _ast.Arith):
        pyop = PY_ARITH.get(e.op)
        if pyop is None:
            raise ValueError(f"unknown arithmetic operator {e.op!r}")
        fl, fr = _closure_expr(e.left), _closure_expr(e.right)

        def arith(ev: Mapping[str, Any]) -> Any:
            a, b = fl(ev), fr(ev)
            ta, tb = type(a), type(b)
            if (ta is int or ta is float) and (tb is int or tb is float):
                try:
                    r = pyop(a, b)
                except (ZeroDivisionError, OverflowError):
                    return None
                return r if r == r else None  # NaN (e.g. inf - inf) is NULL
            if a is None or b is None or ta is str or tb is str:
                return None
            return time_arith(e.op, a, b)  # times and durations
        return arith
    raise TypeError(f"not an expression: {e!r}")


def _compile_row_compare(atom: _ast.Compare) -> RowFn:
    op, left, right = norm_op(atom.op), atom.left, atom.right
    if isinstance(right, _ast.Attr) and isinstance(left, _ast.Literal):
        op, left, right = FLIP[op], right, left
    pyop = PY_CMP[op]
    if isinstance(left, _ast.Attr) and isinstance(right, _ast.Literal):
        name, lit = left.name, norm(right.value)
        if type(lit) is str:
            def cmp_str(ev: Mapping[str, Any]) -> int:
                v = ev.get(name)
                if type(v) is str:
                    return TRUE if pyop(v, lit) else FALSE
                return cmp3(op, norm(v), lit)
            return cmp_str
        if type(lit) is int or type(lit) is float:
            def cmp_num(ev: Mapping[str, Any]) -> int:
                v = ev.get(name)
                t = type(v)
                if t is int or t is float:
                    if v != v:
                        return UNKNOWN
                    return TRUE if pyop(v, lit) else FALSE
                return cmp3(op, norm(v), lit)
            return cmp_num
    fl, fr = compile_row_expr(left), compile_row_expr(right)

    def compare(ev: Mapping[str, Any]) -> int:
        a, b = fl(ev), fr(ev)
        t = type(a)
        if t is type(b) and (t is int or t is float or t is str):
            return TRUE if pyop(a, b) else FALSE
        return cmp3(op, a, b)
    return compare


class LikeMatcher:
    """The code of ``s LIKE pattern`` (RE2 partial match) for one string, cached per string.

    The cache (``cache``, mutated in place) holds at most ``LIKE_CACHE_SIZE`` strings of
    ``LIKE_CACHE_CHARS`` characters in all, as they were when the matcher was made; over
    either, it starts afresh (RE2-style: no bookkeeping on a hit).
    """

    __slots__ = ("cache", "chars", "longest", "max_chars", "max_entries", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.cache: dict[str, int] = {}
        self.chars = 0
        self.max_entries = LIKE_CACHE_SIZE
        self.max_chars = LIKE_CACHE_CHARS
        self.longest = LIKE_CACHE_CHARS // 64

    def __call__(self, s: str) -> int:
        r = self.cache.get(s)
        return r if r is not None else self.miss(s)

    def cached(self) -> tuple[int, int]:
        """``(strings, characters)`` in the cache now."""
        return len(self.cache), self.chars

    def miss(self, s: str) -> int:
        """Match ``s`` with RE2 and cache the answer if it fits."""
        try:
            r = pc.match_substring_regex(pa.array([s], pa.string()), pattern=self.pattern)
            code = TRUE if r[0].as_py() else FALSE
        except (UnicodeError, pa.ArrowException):  # e.g. lone surrogates: not Arrow text
            code = UNKNOWN
        n = len(s)
        if n <= self.longest:
            if len(self.cache) >= self.max_entries or self.chars + n > self.max_chars:
                self.cache.clear()
                self.chars = 0
            self.cache[s] = code
            self.chars += n
        return code


def like_matcher(pattern: str) -> LikeMatcher:
    """The code of ``s LIKE pattern`` for one string, cached within a budget."""
    return LikeMatcher(pattern)


def check_regex(atom: _ast.Like) -> None:
    """Raise :class:`CeqlValidationError` if RE2 rejects the pattern of ``atom``."""
    try:
        pc.match_substring_regex(pa.array([""], pa.string()), pattern=atom.pattern)
    except pa.ArrowInvalid as exc:
        span = atom.span
        raise CeqlValidationError(
            f"invalid regular expression {atom.pattern!r} in LIKE: {exc}",
            line=span.line, column=span.column) from exc


def compile_row_atom(atom: Atom, type_key: str, stream_key: str) -> RowFn:
    """``atom`` as a function of one event giving its code."""
    if isinstance(atom, TypeIs):
        name = atom.name
        return lambda ev: TRUE if ev.get(type_key) == name else FALSE
    if isinstance(atom, StreamIs):
        name = atom.name

        def stream(ev: Mapping[str, Any]) -> int:
            v = ev.get(stream_key)
            if v is None or v == name:
                return TRUE
            return TRUE if norm(v) is None else FALSE  # NaN is NULL too
        return stream
    if isinstance(atom, _ast.Compare):
        return _compile_row_compare(atom)
    if isinstance(atom, _ast.Like):
        fx, matcher = compile_row_expr(atom.expr), like_matcher(atom.pattern)
        cache, miss = matcher.cache, matcher.miss

        def like(ev: Mapping[str, Any]) -> int:
            x = fx(ev)
            if isinstance(x, str):
                r = cache.get(x)
                return r if r is not None else miss(x)
            return UNKNOWN
        return like
    if isinstance(atom, _ast.InSet):
        return _compile_row_inset(atom)
    if isinstance(atom, _ast.InRange):
        fx, flo, fhi = (compile_row_expr(e) for e in (atom.expr, atom.lo, atom.hi))

        def in_range(ev: Mapping[str, Any]) -> int:
            x, lo, hi = fx(ev), flo(ev), fhi(ev)
            if type(x) in _NUM_TYPES and type(lo) in _NUM_TYPES and type(hi) in _NUM_TYPES:
                return TRUE if lo <= x <= hi else FALSE
            return and3(cmp3(">=", x, lo), cmp3("<=", x, hi))
        return in_range
    raise TypeError(f"not a predicate atom: {atom!r}")


def _compile_row_inset(atom: _ast.InSet) -> RowFn:
    fx, code_of = compile_row_expr(atom.expr), InSetSpec(atom.values).row_code
    if atom.negated:
        return lambda ev: NOT3[code_of(fx(ev))]
    return lambda ev: code_of(fx(ev))
