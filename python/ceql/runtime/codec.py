"""A tagged binary encoding of plain data, for snapshots: decoding runs no code.

Snapshots cross a trust boundary (Spark keeps them in its state store and checkpoints), so
they are not pickles. A value is one tag byte and its body: ``None``, booleans, integers of
any size, floats (NaN and infinities too), text, bytes, tuples, lists, dicts, sets and
frozensets, packed integer columns (``array`` of typecode ``b``, ``h``, ``i`` or ``q``),
``Fraction``, ``Decimal``, ``datetime``/``date``/``time``/``timedelta`` with fixed-offset or
IANA time zones (and those zones alone), and Arrow record batches (as Arrow IPC, which
describes data only). Anything else is refused when saving (:class:`Unencodable`, naming its
type). Decoding checks every tag and length and nests at most :data:`MAX_DEPTH` deep; whatever
it cannot read is :class:`Malformed`. Containers are written iteratively, so long lists cost
no recursion.
"""

from __future__ import annotations

import datetime as dt
import struct
import sys
from array import array
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

import pyarrow as pa

__all__ = ["MAX_DEPTH", "Malformed", "Unencodable", "decode", "encode", "int_column"]

MAX_DEPTH = 64  #: how deep containers may nest in a decoded value

_NONE, _TRUE, _FALSE, _INT, _BIG, _FLOAT, _STR, _BYTES = b"NTFibfsy"
_TUPLE, _LIST, _DICT, _SET, _FROZEN = b"(ldSz"
_FRACTION, _DECIMAL, _DATETIME, _DATE, _TIME, _DELTA, _ARROW, _ZONE, _INTS = b"qDtaemAZQ"
_TZ_NONE, _TZ_FIXED, _TZ_NAMED = 0, 1, 2

_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_SIZED = {_TUPLE: tuple, _LIST: list, _SET: set, _FROZEN: frozenset}
_WIDTHS = {"b": 1, "h": 2, "i": 4, "q": 8}  # array typecodes of integer columns: byte widths


class Unencodable(TypeError):
    """A value a snapshot cannot hold."""


class Malformed(ValueError):
    """Bytes that are not an encoded value."""


def encode(value: Any) -> bytes:
    """``value`` as bytes (see the module docstring)."""
    out: list[bytes] = []
    put = out.append
    todo: list[Any] = [value]
    pop = todo.pop
    while todo:
        v = pop()
        t = type(v)
        if v is None:
            put(b"N")
        elif t is bool:
            put(b"T" if v else b"F")
        elif t is int:
            if -(1 << 63) <= v < (1 << 63):
                put(b"i" + _I64.pack(v))
            else:
                _text(put, _BIG, str(v))
        elif t is float:
            put(b"f" + _F64.pack(v))
        elif t is str:
            _text(put, _STR, v)
        elif t is tuple or t is list:
            put((b"(" if t is tuple else b"l") + _U32.pack(len(v)))
            todo.extend(reversed(v))
        elif t is dict:
            put(b"d" + _U32.pack(len(v)))
            for k, x in reversed(list(v.items())):
                todo.append(x)
                todo.append(k)
        elif t is frozenset or t is set:
            items = sorted(v, key=_order)  # one set, one encoding
            put((b"z" if t is frozenset else b"S") + _U32.pack(len(items)))
            todo.extend(reversed(items))
        else:
            _other(put, todo, v)
    return b"".join(out)


def _text(put: Any, tag: int, s: str) -> None:
    b = s.encode("utf-8", "surrogatepass")
    put(bytes((tag,)) + _U32.pack(len(b)) + b)


def _order(v: Any) -> tuple[str, bytes]:
    return type(v).__name__, encode(v)


def _other(put: Any, todo: list[Any], v: Any) -> None:
    """Values beyond the containers and scalars above (subclasses of those included)."""
    if isinstance(v, bool):
        put(b"T" if v else b"F")
    elif isinstance(v, int):
        todo.append(int(v))
    elif isinstance(v, float):
        todo.append(float(v))
    elif isinstance(v, str):
        todo.append(str(v))
    elif isinstance(v, bytes | bytearray | memoryview):
        b = bytes(v)
        put(b"y" + _U32.pack(len(b)) + b)
    elif isinstance(v, tuple):
        todo.append(tuple(v))
    elif isinstance(v, Fraction):
        put(bytes((_FRACTION,)))
        todo.append(v.denominator)
        todo.append(v.numerator)
    elif isinstance(v, Decimal):
        _text(put, _DECIMAL, str(v))
    elif isinstance(v, dt.datetime):
        put(bytes((_DATETIME,)) + struct.pack("<hBBBBBI", v.year, v.month, v.day, v.hour,
                                              v.minute, v.second, v.microsecond)
            + bytes((v.fold,)))
        _zone(put, v.tzinfo)
    elif isinstance(v, dt.date):
        put(bytes((_DATE,)) + struct.pack("<hBB", v.year, v.month, v.day))
    elif isinstance(v, dt.time):
        put(bytes((_TIME,)) + struct.pack("<BBBI", v.hour, v.minute, v.second, v.microsecond)
            + bytes((v.fold,)))
        _zone(put, v.tzinfo)
    elif isinstance(v, dt.timedelta):
        put(bytes((_DELTA,)) + struct.pack("<qqq", v.days, v.seconds, v.microseconds))
    elif isinstance(v, dt.tzinfo):
        put(bytes((_ZONE,)))
        _zone(put, v)
    elif isinstance(v, array) and v.typecode in _WIDTHS:
        b = v.tobytes() if sys.byteorder == "little" else _swapped(v).tobytes()
        put(b"Q" + v.typecode.encode() + _U32.pack(len(v)) + b)
    elif isinstance(v, pa.RecordBatch):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, v.schema) as w:
            w.write_batch(v)
        b = sink.getvalue().to_pybytes()
        put(b"A" + _U32.pack(len(b)) + b)
    elif hasattr(v, "item") and callable(v.item) and type(v).__module__ == "numpy":
        todo.append(v.item())  # a NumPy scalar: its Python value
    else:
        raise Unencodable(f"a value of type {type(v).__module__}.{type(v).__qualname__}")


def _swapped(v: array) -> array:  # type: ignore[type-arg]
    w = array("q", v)
    w.byteswap()
    return w


def int_column(values: list[Any]) -> Any:
    """``values`` as an ``array`` of the narrowest signed width that holds them (a packed
    column, fast to write and read) when they are all plain integers that fit in 64 bits;
    else ``values`` itself."""
    if not values or not all(type(x) is int for x in values):
        return values
    lo, hi = min(values), max(values)
    for code, bound in (("b", 1 << 7), ("h", 1 << 15), ("i", 1 << 31), ("q", 1 << 63)):
        if -bound <= lo and hi < bound:
            return array(code, values)
    return values


def _zone(put: Any, tz: dt.tzinfo | None) -> None:
    if tz is None:
        put(bytes((_TZ_NONE,)))
    elif isinstance(tz, dt.timezone):
        off = tz.utcoffset(None)
        put(bytes((_TZ_FIXED,)) + struct.pack("<qqq", off.days, off.seconds, off.microseconds))
    else:
        key = getattr(tz, "key", None)  # zoneinfo.ZoneInfo
        if not isinstance(key, str):
            raise Unencodable(f"a time zone of type {type(tz).__qualname__} (use a fixed offset "
                              "or a zoneinfo.ZoneInfo)")
        put(bytes((_TZ_NAMED,)))
        _text(put, _STR, key)


# ---------------------------------------------------------------------- decoding

class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        p = self.pos
        end = p + n
        if n < 0 or end > len(self.data):
            raise Malformed(f"truncated at byte {p}")
        self.pos = end
        return self.data[p:end]

    def byte(self) -> int:
        p = self.pos
        if p >= len(self.data):
            raise Malformed(f"truncated at byte {p}")
        self.pos = p + 1
        return self.data[p]

    def u32(self) -> int:
        return int(_U32.unpack(self.take(4))[0])

    def text(self) -> str:
        try:
            return self.take(self.u32()).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise Malformed(f"text that is not UTF-8 near byte {self.pos}") from exc

    def string(self) -> str:
        if self.byte() != _STR:
            raise Malformed(f"a time zone name expected at byte {self.pos - 1}")
        return self.text()


def decode(data: bytes) -> Any:
    """The value :func:`encode` wrote (all of ``data``)."""
    r = _Reader(bytes(data))
    value = _value(r, 0)
    if r.pos != len(r.data):
        raise Malformed(f"{len(r.data) - r.pos} bytes after the value")
    return value


def _value(r: _Reader, depth: int) -> Any:
    """One value; containers are read with an explicit stack (depth counts nesting)."""
    # stack of [kind, size, items]: a container being filled
    stack: list[tuple[int, int, list[Any]]] = []
    while True:
        tag = r.byte()
        if tag in _SIZED or tag == _DICT:
            if len(stack) + depth >= MAX_DEPTH:
                raise Malformed(f"containers nested deeper than {MAX_DEPTH}")
            n = r.u32()
            if n > len(r.data) - r.pos:  # each item takes a byte at least
                raise Malformed(f"a container of {n} items in {len(r.data) - r.pos} bytes")
            frame: tuple[int, int, list[Any]] = (tag, n * 2 if tag == _DICT else n, [])
            if frame[1]:
                stack.append(frame)
                continue
            v = _built(frame)
        elif tag == _FRACTION:
            num = _value(r, depth + len(stack) + 1)
            den = _value(r, depth + len(stack) + 1)
            if type(num) is not int or type(den) is not int or den <= 0:
                raise Malformed("a fraction whose parts are not integers")
            v = Fraction(num, den)
        else:
            v = _scalar(r, tag)
        while True:  # hand v to the container being filled; close the full ones
            if not stack:
                return v
            frame = stack[-1]
            frame[2].append(v)
            if len(frame[2]) < frame[1]:
                break
            stack.pop()
            v = _built(frame)


def _built(frame: tuple[int, int, list[Any]]) -> Any:
    tag, _, items = frame
    try:
        if tag == _DICT:
            return dict(zip(items[::2], items[1::2], strict=True))
        return _SIZED[tag](items)
    except TypeError as exc:  # an unhashable key or member
        raise Malformed(str(exc)) from None


def _scalar(r: _Reader, tag: int) -> Any:
    if tag == _NONE:
        return None
    if tag == _TRUE:
        return True
    if tag == _FALSE:
        return False
    if tag == _INT:
        return _I64.unpack(r.take(8))[0]
    if tag == _BIG:
        s = r.text()
        if not s.lstrip("-").isdigit() or len(s) > 4300:
            raise Malformed("an integer that is not one")
        return int(s)
    if tag == _FLOAT:
        return _F64.unpack(r.take(8))[0]
    if tag == _STR:
        return r.text()
    if tag == _BYTES:
        return r.take(r.u32())
    if tag == _DECIMAL:
        try:
            return Decimal(r.text())
        except InvalidOperation:
            raise Malformed("a decimal that is not one") from None
    try:
        if tag == _DATETIME:
            y, mo, d, h, mi, s, us = struct.unpack("<hBBBBBI", r.take(11))
            fold = r.byte()
            return dt.datetime(y, mo, d, h, mi, s, us, tzinfo=_read_zone(r), fold=fold)
        if tag == _DATE:
            return dt.date(*struct.unpack("<hBB", r.take(4)))
        if tag == _TIME:
            h, mi, s, us = struct.unpack("<BBBI", r.take(7))
            fold = r.byte()
            return dt.time(h, mi, s, us, tzinfo=_read_zone(r), fold=fold)
        if tag == _DELTA:
            days, secs, us = struct.unpack("<qqq", r.take(24))
            return dt.timedelta(days=days, seconds=secs, microseconds=us)
    except (ValueError, OverflowError) as exc:
        raise Malformed(f"a time that is not one ({exc})") from None
    if tag == _ZONE:
        return _read_zone(r)
    if tag == _INTS:
        code = chr(r.byte())
        if code not in _WIDTHS:
            raise Malformed(f"an integer column of unknown width {code!r}")
        n = r.u32()
        col = array(code)
        col.frombytes(r.take(_WIDTHS[code] * n))
        if sys.byteorder != "little":
            col.byteswap()
        return col
    if tag == _ARROW:
        try:
            with pa.ipc.open_stream(pa.py_buffer(r.take(r.u32()))) as reader:
                return reader.read_next_batch()
        except (pa.ArrowException, StopIteration) as exc:
            raise Malformed(f"an Arrow batch that is not one ({exc})") from None
    raise Malformed(f"unknown tag {tag!r} at byte {r.pos - 1}")


def _read_zone(r: _Reader) -> dt.tzinfo | None:
    kind = r.byte()
    if kind == _TZ_NONE:
        return None
    if kind == _TZ_FIXED:
        days, secs, us = struct.unpack("<qqq", r.take(24))
        return dt.timezone(dt.timedelta(days=days, seconds=secs, microseconds=us))
    if kind == _TZ_NAMED:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        name = r.string()
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise Malformed(f"an unknown time zone {name!r}") from exc
    raise Malformed(f"unknown time zone kind {kind}")
