"""A ``;`` sequence around a refused element, written back with an element in its place
(:func:`with_element`) or left out (:func:`without_element`, :func:`merged_without`).
"""

from __future__ import annotations

from collections.abc import Sequence

from .scan import (
    last_element,
    operand_end,
)
from .tokens import (
    SEPS,
    Tok,
    join,
)

__all__ = ["merged_without", "not_next_to_not", "with_element", "without_element"]


def not_next_to_not(left: Sequence[Tok], right: Sequence[Tok]) -> bool:
    """True when leaving out the element between ``left`` and ``right`` would put two NOTs in
    a row."""
    last = last_element(left)
    return (last is not None and last.type == "NOT" and len(right) >= 2
            and right[1].type == "NOT")


def merged_without(left: list[Tok], right: list[Tok]) -> str | None:
    """The sequence ``left … right`` without the element between them, whose two NOTs then
    in a row become one: ``A ; NOT B ; [C ;] NOT D ; E`` → ``A ; NOT (B OR D) ; E`` (None
    when a NOT is named or the rest is not plain)."""
    last = last_element(left)
    if last is None:
        return None
    at = left.index(last)
    first_end = operand_end(right, 2)
    if first_end is None or (first_end < len(right) and right[first_end].type not in SEPS):
        return None
    b, d = left[at + 1:-1], right[2:first_end]
    if any(t.type == "AS" for t in (*b, *d)):
        return None
    merged = f"NOT ({join(b)} OR {join(d)})"
    parts = [join(left[:at])] if at else []
    parts.append(merged)
    if first_end < len(right):
        parts.append(join(right[first_end:]))
    return " ".join(parts)


def without_element(left: list[Tok], right: list[Tok]) -> str:
    """The sequence ``left … right`` with the element between them left out."""
    core_left, core_right = left[:-1], right[1:]
    if core_left and core_right:
        both_colon = left[-1].type == right[0].type == "COLON"
        return f"{join(core_left)} {':' if both_colon else ';'} {join(core_right)}"
    return join(core_left or core_right)


def with_element(left: list[Tok], element: str, right: list[Tok]) -> str:
    parts = [join(left)] if left else []
    parts.append(element)
    if right:
        parts.append(join(right))
    return " ".join(parts)
