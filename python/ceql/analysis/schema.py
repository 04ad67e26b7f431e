"""Schemas: the attribute kinds users give (dicts, Python types, pyarrow, Spark) normalized.

:func:`normalize_schema` turns the schemas users have at hand (dicts of type names or Python
types, pyarrow schemas, Spark ``StructType``) into ``{attribute: kind}``.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import fractions
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import CeqlTypeError, CeqlValidationError

__all__ = ["KINDS", "normalize_schema"]

#: The attribute kinds of a normalized schema. ``other`` marks a column predicates cannot use
#: (lists, structs, binary, ...): it may exist in the data, but a query may not test it.
KINDS = ("number", "string", "bool", "timestamp", "other")

_KIND_NAMES: dict[str, str] = {}
for _kind, _names in {
    "number": "number numeric int integer long bigint smallint tinyint short byte int8 int16 "
              "int32 int64 uint8 uint16 uint32 uint64 float float16 float32 float64 halffloat "
              "double real decimal decimal128 decimal256",
    "string": "string str text varchar char utf8 large_string large_utf8 string_view",
    "bool": "bool boolean",
    "timestamp": "timestamp timestamp_ntz timestamp_ltz datetime date date32 date64",
    "other": "other",
}.items():
    for _name in _names.split():
        _KIND_NAMES[_name] = _kind


def _kind_of_name(name: str, attr: str) -> str:
    key = name.strip().lower()
    base = key.split("(", 1)[0].split("[", 1)[0].split("<", 1)[0].strip()
    kind = _KIND_NAMES.get(key) or _KIND_NAMES.get(base)
    if kind is None:
        raise CeqlValidationError(
            f"Unknown type {name!r} for attribute {attr!r} in the schema: use one of "
            "number, string, bool, timestamp")
    return kind


def _kind_of_arrow(t: Any) -> str | None:
    """Kind of a pyarrow DataType, or None if ``t`` is not one (pyarrow already imported)."""
    pa = sys.modules.get("pyarrow")
    if pa is None or not isinstance(t, pa.DataType):
        return None
    types = pa.types
    if types.is_dictionary(t):
        return _kind_of_arrow(t.value_type)
    if types.is_boolean(t):
        return "bool"
    if types.is_integer(t) or types.is_floating(t) or types.is_decimal(t):
        return "number"
    if types.is_string(t) or types.is_large_string(t) or str(t) == "string_view":
        return "string"
    if types.is_timestamp(t) or types.is_date(t):
        return "timestamp"
    return "other"


def _kind_of(t: object, attr: str) -> str:
    if isinstance(t, str):
        return _kind_of_name(t, attr)
    if isinstance(t, type):
        if issubclass(t, bool):
            return "bool"
        if issubclass(t, int | float | decimal.Decimal | fractions.Fraction):
            return "number"
        if issubclass(t, str):
            return "string"
        if issubclass(t, _dt.datetime | _dt.date):
            return "timestamp"
        raise CeqlValidationError(
            f"Unsupported Python type {t.__name__} for attribute {attr!r} in the schema: use "
            "int, float, str, bool or datetime")
    kind = _kind_of_arrow(t)
    if kind is not None:
        return kind
    inner = getattr(t, "type", None)  # a pyarrow Field given as a value
    if inner is not None and _kind_of_arrow(inner) is not None:
        return _kind_of(inner, attr)
    type_name = getattr(t, "typeName", None)  # a Spark DataType
    if callable(type_name):
        spark = str(type_name()).lower()
        return _KIND_NAMES.get(spark, "other")
    np_kind = getattr(t, "kind", None)  # a numpy dtype
    if isinstance(np_kind, str) and hasattr(t, "itemsize"):
        return {"b": "bool", "i": "number", "u": "number", "f": "number", "U": "string",
                "M": "timestamp"}.get(np_kind, "other")
    raise CeqlValidationError(
        f"Cannot read the type {t!r} of attribute {attr!r} in the schema: use one of number, "
        "string, bool, timestamp (or a Python, pyarrow or Spark type)")


def normalize_schema(obj: object) -> dict[str, str]:
    """Turn a schema into ``{attribute: kind}`` with kinds from :data:`KINDS`.

    Accepts a mapping from attribute names to kind names (``"number"``, ``"string"``,
    ``"bool"``, ``"timestamp"`` and common SQL/Arrow spellings such as ``"double"``,
    ``"varchar"``), Python types (``int``, ``float``, ``str``, ``bool``, ``datetime``),
    pyarrow types or fields; a ``pyarrow.Schema``; a Spark ``StructType``; or an iterable of
    ``(name, type)`` pairs or pyarrow fields. Columns of types predicates cannot use (lists,
    structs, binary) get the kind ``other``.
    """
    if isinstance(obj, Mapping):
        return {str(k): _kind_of(v, str(k)) for k, v in obj.items()}
    fields = getattr(obj, "fields", None)  # Spark StructType
    if fields is not None and not callable(fields):
        return {str(f.name): _kind_of(f.dataType, str(f.name)) for f in fields}
    if isinstance(obj, str | bytes) or not isinstance(obj, Iterable):
        raise CeqlTypeError(
            f"Cannot read a schema from {type(obj).__name__}: give a dict such as "
            "{'price': 'number', 'name': 'string'}, a pyarrow schema or a Spark StructType")
    out: dict[str, str] = {}
    for item in obj:  # pyarrow.Schema iterates over fields; else (name, type) pairs
        if hasattr(item, "name") and hasattr(item, "type"):
            out[str(item.name)] = _kind_of(item.type, str(item.name))
        elif isinstance(item, tuple) and len(item) == 2:
            out[str(item[0])] = _kind_of(item[1], str(item[0]))
        else:
            raise CeqlValidationError(
                f"Cannot read a schema entry {item!r}: give (name, type) pairs or fields")
    return out
