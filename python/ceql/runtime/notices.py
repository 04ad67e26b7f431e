"""What an evaluation notices about its input that makes an answer probably not the one meant:
event types and streams of the query that no event carries (a misspelling gives no match and no
error), and events that compare a string with a number (a CSV read without a schema).

Both are noticed at a cost the normal path does not feel: names only until every name of the
query has occurred (rows: the type value, one read; Arrow: a batch's distinct values), and mixed
values only on the predicates' slow branches (:mod:`ceql.predicates.mixing`) or from a batch's
column types.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
import sys
import warnings
import weakref
from collections.abc import Collection, Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ValueTypeWarning
from ..ir import (
    depth,
    expr_nodes,
    filter_atoms,
    filter_leaves,
    formula_nodes,
    is_correlated,
    pred_leaves,
    recursion_for,
)
from ..ir import nodes as N
from ..predicates import AtomTable
from ..predicates.atoms import Atom, TypeIs, norm_op, structural_key
from ..predicates.between import Listener
from ..predicates.mixing import Mix, batch_mixes, column_kind, find_mix
from ..predicates.row import compile_row_expr
from ..predicates.values import FALSE, PY_CMP, TRUE, UNKNOWN, norm
from ..predicates.values import kind as value_kind
from .times import column, show_event

__all__ = ["CLASSES_CAP", "NAMES_CAP", "SAMPLE", "SEEN_SHOWN", "TEXT_CHECKS", "Attributes",
           "BetweenValues", "NameSet", "Names", "ValueTypes", "filtered_types", "query_attributes",
           "unseen_names_message", "warn"]

#: Distinct type values (and, apart, stream values) an evaluation remembers, at most.
NAMES_CAP = 1000
#: Names seen that a message lists, at most.
SEEN_SHOWN = 10
#: Events whose type values are collected (for messages) while a type of the query is missing.
SAMPLE = 10_000
#: Ordered comparisons of two strings, not both numbers, after which conditions between events
#: stop being watched for numbers held as text (they compare text that is meant as text).
TEXT_CHECKS = 1000

def _ours(module: object) -> bool:
    return isinstance(module, str) and (module == "ceql" or module.startswith("ceql."))


def warn(message: str, category: type[Warning]) -> None:
    """Issue a warning attributed to the first caller outside the ceql package."""
    level = 1
    f = sys._getframe(0)
    while f is not None and _ours(f.f_globals.get("__name__")):
        f = f.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, category, stacklevel=level)


# ---------------------------------------------------------------------- names never seen

class NameSet(NamedTuple):
    """Event types, stream names and attribute names, each sorted."""

    types: tuple[Any, ...]
    streams: tuple[Any, ...]
    attributes: tuple[Any, ...] = ()


def _sorted(values: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(sorted(values, key=lambda v: (not isinstance(v, str), str(v))))


def _listed(seen: set[Any]) -> tuple[Any, ...]:
    return _sorted(v for v in seen if v is not None)[:NAMES_CAP]


class Names:
    """The query's event types and streams no event has carried yet, and the values seen.

    Types are those of the events the query reads (in its FROM streams, with a PARTITION BY
    key), told by their classes (a type test's bit: one ``&`` per event), so a type is looked
    for as long as it has not occurred, at no real cost; the type values themselves are
    collected from the first :data:`SAMPLE` such events only, for messages. Streams are those
    of every event, looked for until each stream of the query has occurred. At most
    :data:`NAMES_CAP` values of each kind are kept.
    """

    __slots__ = ("missing_mask", "missing_streams", "missing_types", "sampling", "seen_streams",
                 "seen_types", "type_bits")

    def __init__(self, types: Collection[str], streams: Collection[str],
                 type_bits: Mapping[str, int]) -> None:
        self.missing_types: set[str] = set(types)
        self.missing_streams: set[str] = set(streams)
        #: each type test's TRUE bit in an event class
        self.type_bits = {t: b for t, b in type_bits.items() if t in self.missing_types}
        self.missing_mask = 0  # the bits of the types not seen yet
        for b in self.type_bits.values():
            self.missing_mask |= b
        #: events whose type value is still to be collected
        self.sampling = SAMPLE if self.missing_types else 0
        self.seen_types: set[Any] = set()
        self.seen_streams: set[Any] = set()

    @property
    def tracking_streams(self) -> bool:
        """Whether some stream of the query has not occurred yet."""
        return bool(self.missing_streams)

    def note_class(self, c: int) -> int:
        """An event of class ``c`` was read; the bits of the types still missing."""
        for name, bit in list(self.type_bits.items()):
            if c & bit:
                self.missing_types.discard(name)
                del self.type_bits[name]
                self.missing_mask &= ~bit
        if not self.missing_mask:
            self.sampling = 0
        return self.missing_mask

    def note_classes(self, classes: Iterable[int]) -> None:
        """Events of these classes were read."""
        for c in classes:
            if c & self.missing_mask:
                self.note_class(c)

    def note_type(self, v: Any) -> None:
        """An event read carries type ``v`` (the caller counts :attr:`sampling` down)."""
        _note(v, self.seen_types)

    def note_stream(self, v: Any) -> bool:
        """An event carries stream ``v``; whether to go on looking."""
        if type(v) is str:
            self.missing_streams.discard(v)
        _note(v, self.seen_streams)
        return bool(self.missing_streams)

    def note_types_column(self, col: pa.Array | None, rows: int) -> None:
        """``rows`` events read carry the types of ``col`` (those rows)."""
        if col is not None and self.sampling:
            _note_column(col, set(), self.seen_types)
        self.sampling = max(0, self.sampling - rows)

    def note_streams_column(self, col: pa.Array | None) -> None:
        """The events of a batch carry the streams of ``col``."""
        if col is not None and self.missing_streams:
            _note_column(col, self.missing_streams, self.seen_streams)

    def unseen(self, types: Collection[str], streams: Collection[str]) -> NameSet:
        """Which of ``types`` and ``streams`` (the query's) no event carried."""
        return NameSet(_sorted(t for t in types if t in self.missing_types),
                       _sorted(s for s in streams if s in self.missing_streams))

    def seen(self) -> NameSet:
        """The type and stream values seen (see the class)."""
        return NameSet(_listed(self.seen_types), _listed(self.seen_streams))

    def state(self) -> tuple[Any, ...]:
        """What a snapshot keeps."""
        return (sorted(self.missing_types), sorted(self.missing_streams),
                list(self.seen_types), list(self.seen_streams), self.sampling)

    def load(self, state: tuple[Any, ...]) -> None:
        """Take back what :meth:`state` gave."""
        mt, ms, st, ss, sampling = state
        for name in list(self.type_bits):
            if name not in mt:
                self.note_class(self.type_bits[name])
        self.missing_streams &= set(ms)
        self.seen_types = set(st)
        self.seen_streams = set(ss)
        self.sampling = min(self.sampling, int(sampling))


def _note(v: Any, seen: set[Any]) -> None:
    # ``seen`` holds None too (never listed), so the row loop tests one set
    try:
        hash(v)
    except TypeError:
        return  # no name: it matches no type and is refused as a stream elsewhere
    if len(seen) <= NAMES_CAP:
        seen.add(v)


def _note_column(col: pa.Array, missing: set[str], seen: set[Any]) -> None:
    try:
        if pa.types.is_dictionary(col.type):
            col = col.dictionary.take(pc.unique(col.indices.drop_null()))
        uniq = pc.unique(col.drop_null())
        if _is_text(uniq.type) and missing:
            wanted = pa.array(sorted(missing), uniq.type)
            for name in pc.filter(wanted, pc.is_in(wanted, value_set=uniq)).to_pylist():
                missing.discard(name)
        room = NAMES_CAP + 1 - len(seen)
        if room > 0:
            for v in uniq.slice(0, room).to_pylist():
                try:
                    seen.add(v)
                except TypeError:
                    pass  # a nested value: no name
    except (pa.ArrowException, ValueError, OverflowError):
        pass  # a column of values Arrow cannot list or compare: none is a name


def query_attributes(ast: N.Query) -> frozenset[str]:
    """The attributes ``ast`` reads of events: in FILTER conditions (plain, qualified, PREV,
    aggregated), PARTITION BY and WITHIN ``[attr]``."""
    out: set[str] = set(ast.partition_by)
    if ast.within is not None and ast.within.attr is not None:
        out.add(ast.within.attr)
    for f in formula_nodes(ast.where):
        if not isinstance(f, N.Filter):
            continue
        for leaf in filter_leaves(f.cond):
            for e in expr_nodes(leaf.pred):
                if isinstance(e, N.Attr | N.Prev):
                    out.add(e.name)
                elif isinstance(e, N.Agg) and e.attr is not None:
                    out.add(e.attr)
    return frozenset(out)


class Attributes:
    """The query's attributes no event has carried yet (a misspelling gives no match and no
    error), and the attribute names seen, for messages.

    Looked for only while one is missing: each row batch (a list or tuple; any other iterable
    cannot be read twice, and ends the search, which then reports nothing) after it was
    evaluated, and the column names of each Arrow batch. Names seen are collected from the
    first :data:`SAMPLE` events, at most :data:`NAMES_CAP` of them.
    """

    __slots__ = ("missing", "sampling", "seen")

    def __init__(self, names: Collection[str]) -> None:
        self.missing: set[str] = set(names)
        self.seen: set[str] = set()
        self.sampling = SAMPLE

    def give_up(self) -> None:
        """Stop looking: nothing is reported missing."""
        self.missing.clear()

    def note_rows(self, rows: Any) -> None:
        """The events of a row batch were read."""
        if not isinstance(rows, list | tuple):
            self.give_up()
            return
        missing, seen = self.missing, self.seen
        for e in rows:
            try:
                for name in [m for m in missing if m in e]:
                    missing.discard(name)
                if self.sampling:
                    self.sampling -= 1
                    if len(seen) < NAMES_CAP:
                        seen.update(k for k in e.keys() if isinstance(k, str))
            except (TypeError, AttributeError):
                continue  # not a mapping: refused where events are read
            if not missing:
                return

    def note_names(self, names: Iterable[str]) -> None:
        """A batch's columns are ``names``."""
        names = list(names)
        self.missing.difference_update(names)
        if len(self.seen) < NAMES_CAP:
            self.seen.update(names)

    def unseen(self) -> tuple[str, ...]:
        """The query's attributes no event carried, sorted."""
        return tuple(sorted(self.missing))

    def seen_names(self) -> tuple[str, ...]:
        """The attribute names seen, sorted (at most :data:`NAMES_CAP`)."""
        return tuple(sorted(self.seen)[:NAMES_CAP])


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_string_view(t))


def _names(values: Iterable[Any]) -> str:
    return ", ".join(repr(v) for v in values)


def _closest(name: str, seen: Iterable[Any], several: bool) -> str:
    pool = [v for v in seen if isinstance(v, str)]
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {close[0]!r}{f' for {name!r}' if several else ''}?)"


def unseen_names_message(unseen: NameSet, seen: NameSet, events: int) -> str | None:
    """The warning for the query's names in ``unseen`` that none of ``events`` events carried,
    given the values ``seen``; None when there is nothing to say (nothing unseen, no events).

    A stream is mentioned only when some event carried a stream (an event without one belongs
    to every stream). Combine several evaluations (e.g. Spark tasks) by intersecting their
    ``unseen`` names, joining their ``seen`` ones and adding their event counts.
    """
    if events <= 0:
        return None
    n = f"{events:,}"
    parts = []
    for kind, names, values in (("event type", unseen.types, seen.types),
                                ("stream", unseen.streams if seen.streams else (), seen.streams),
                                ("attribute", unseen.attributes, seen.attributes)):
        if not names:
            continue
        shown = _sorted(values)[:SEEN_SHOWN]
        more = f" and {len(values) - SEEN_SHOWN:,} more" if len(values) > SEEN_SHOWN else ""
        article = "an" if kind[0] in "aeiou" else "a"
        listed = (f"{kind}s seen: {_names(shown)}{more}" if shown
                  else f"no event had {article} {kind}")
        plural = "s" if len(names) > 1 else ""
        them = "them" if len(names) > 1 else "it"
        hints = "".join(_closest(name, values, len(names) > 1) for name in names)
        what = ("A misspelt attribute is missing from every event, so the conditions that "
                "read it never hold" if kind == "attribute" else "A misspelt name matches "
                "nothing")
        parts.append(f"The query's {kind}{plural} {_names(names)} never occurred in the {n} "
                     f"events; {listed}{hints}. {what}: check {them} against the data.")
    return " ".join(parts) or None


# ---------------------------------------------------------------------- strings vs numbers



def filtered_types(where: N.Formula) -> dict[Any, frozenset[str]]:
    """Per FILTER atom (by structural key): the event types of the variables it filters."""
    out: dict[Any, frozenset[str]] = {}
    for f in formula_nodes(where):
        if not isinstance(f, N.Filter):
            continue
        by_var: dict[str, set[str]] = {}
        todo: list[tuple[N.Formula, tuple[str, ...]]] = [(f.formula, ())]
        while todo:
            node, names = todo.pop()
            if isinstance(node, N.EventType):
                for v in (node.name, *names):
                    by_var.setdefault(v, set()).add(node.name)
            elif isinstance(node, N.As):
                todo.append((node.formula, (*names, node.var)))
            elif isinstance(node, N.Seq | N.Or):
                todo += [(node.left, names), (node.right, names)]
            elif isinstance(node, N.Plus | N.Filter):
                todo.append((node.formula, names))
        for fa in filter_atoms(f.cond):
            if is_correlated(fa):  # not an atom of the automaton
                continue
            types = frozenset(by_var.get(fa.var, ()))
            for a in pred_leaves(fa.pred):
                key = structural_key(a)
                out[key] = out.get(key, frozenset()) | types
    return out


# per atom table (one per compiled query and key names): evaluators are made per Spark
# partition, so this walk of the query must not be repeated for each
_RELEVANT: weakref.WeakKeyDictionary[AtomTable, dict[int, frozenset[str]]] = \
    weakref.WeakKeyDictionary()


def _relevant_types(atoms: AtomTable, where: N.Formula) -> dict[int, frozenset[str]]:
    hit = _RELEVANT.get(atoms)
    if hit is None or len(hit) != len(atoms.atoms):
        with recursion_for(depth(where)):  # structural keys recurse into deep predicates
            by_key = filtered_types(where)
            hit = {id(a): by_key.get(structural_key(a), frozenset()) for a in atoms.atoms}
        _RELEVANT[atoms] = hit
    return hit


#: Classes an evaluation remembers as having nothing to look into (or something), at most.
CLASSES_CAP = 1 << 16


class ValueTypes:
    """Finds the first event that compares a string with a number in a condition that reads
    it (its type is one the filtered variable binds), and warns once (:class:`ValueTypeWarning`).

    Rows: the row path's atoms are pure; an event's class says which atoms may hide a mix
    (unknown, or false for some ``IN RANGE``: :meth:`read_row`), and only those are looked
    into (:func:`~ceql.predicates.mixing.find_mix`). The classes where none may (``plain``)
    cost the row loop one set lookup.
    """

    __slots__ = ("atoms", "done", "label", "plain", "relevant", "schema", "schema_mixes",
                 "suspects", "text", "type_key", "watched")

    def __init__(self, atoms: AtomTable, where: N.Formula, text: str | None,
                 type_key: str) -> None:
        #: id of each atom of the table → the types whose events it reads
        self.relevant = _relevant_types(atoms, where)
        self.atoms = atoms
        self.text = text
        self.type_key = type_key
        self.done = not any(self.relevant.values())
        self.schema: pa.Schema | None = None
        self.schema_mixes: list[Mix] = []
        #: position as the caller counts it (e.g. before sorting), for messages
        self.label: Any = None
        #: classes whose codes hide no mix where the event's type is read (row path)
        self.plain: set[int] = set()
        #: classes that may hide one → the atoms to look into, in index order
        self.suspects: dict[int, tuple[int, ...]] = {}
        #: per atom some type reads: (index, codes that may hide a mix, the indices of the
        #: type atoms of the types it reads, whether one of those types has none)
        self.watched = _watched(atoms.atoms, self.relevant)

    def read_row(self, c: int, event: Mapping[str, Any], pos: int) -> bool:
        """Row ``pos`` (``event``, of class ``c`` not in :attr:`plain`) was read: warn if it
        meets a string and a number in an atom that reads its type. True while listening."""
        if self.done:
            return False
        todo = self.suspects.get(c)
        if todo is None:
            if len(self.plain) + len(self.suspects) >= CLASSES_CAP:
                self.plain.clear()  # (in place: the row loop holds it)
                self.suspects.clear()
            todo = self._suspects(c)
            if not todo:
                self.plain.add(c)
                return True
            self.suspects[c] = todo
        t = event.get(self.type_key)
        if not isinstance(t, str):
            return True
        atoms = self.atoms.atoms
        for k in todo:
            atom = atoms[k]
            if t in self.relevant[id(atom)]:
                node = find_mix(atom, event)
                if node is not None:
                    self.warn(node, event, pos)
                    return False
        return True

    def _suspects(self, c: int) -> tuple[int, ...]:
        """The atoms whose code in class ``c`` may hide a mix, for an event of a type they
        read (the type's atom is true in ``c``)."""
        out = []
        for k, codes, type_atoms, untyped in self.watched:
            if (c >> 2 * k) & 3 in codes and (untyped or any(
                    (c >> 2 * j) & 3 == TRUE for j in type_atoms)):
                out.append(k)
        return tuple(out)

    def check_batch(self, rb: pa.RecordBatch, idx: np.ndarray, base: int) -> None:
        """Warn for the first row of ``idx`` (rows of ``rb`` at ``base`` that take part) whose
        columns meet a string and a number in a condition that reads it."""
        if self.done:
            return
        schema = rb.schema
        if self.schema is None or not schema.equals(self.schema):
            self.schema = schema

            def kind_of(name: str) -> int:
                i = schema.get_field_index(name)
                return 0 if i < 0 else column_kind(schema.field(i).type)
            self.schema_mixes = [m for a in self.atoms.atoms
                                 if self.relevant.get(id(a))
                                 for m in batch_mixes(a, kind_of)]
        if not self.schema_mixes or idx.size == 0:
            return
        tcol = column(rb, self.type_key, None)
        if tcol is None:
            return
        first: tuple[int, Mix] | None = None
        try:
            if pa.types.is_dictionary(tcol.type):
                tcol = tcol.dictionary_decode()
            if not _is_text(tcol.type):
                return
            tcol = tcol.cast(pa.large_string())
            for mix in self.schema_mixes:
                wanted = pa.array(sorted(self.relevant[id(mix.atom)]), pa.large_string())
                ok = np.asarray(pc.is_in(tcol, value_set=wanted).fill_null(False)
                                .to_numpy(zero_copy_only=False), dtype=bool)
                for c in mix.columns:
                    col = rb.column(rb.schema.get_field_index(c))
                    ok &= np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
                hit = np.flatnonzero(ok[idx])
                if hit.size and (first is None or hit[0] < first[0]):
                    first = (int(hit[0]), mix)
        except (pa.ArrowException, ValueError):
            return  # column types Arrow cannot compare here: no warning (it is a hint)
        if first is None:
            return
        i = int(idx[first[0]])
        try:
            event = rb.slice(i, 1).to_pylist()[0]
        except (pa.ArrowException, ValueError, OverflowError):
            event = {}
        self.warn(first[1].node, event, base + i)

    def warn(self, node: Any, event: Mapping[str, Any], pos: int) -> None:
        """Issue the warning for event ``pos`` (once)."""
        self.done = True
        if self.label is not None:
            pos = self.label(pos)
        warn(self.message(node, event, pos), ValueTypeWarning)

    def message(self, node: Any, event: Mapping[str, Any], pos: int) -> str:
        """What the warning says about ``node`` meeting values that never compare in ``event``."""
        span = getattr(node, "span", None)
        text = (f" `{self.text[span.start:span.end]}`"
                if self.text is not None and span is not None and span.end > span.start else "")
        if isinstance(node, N.Arith | N.Neg):
            sides: list[N.Expr] = [node.left, node.right] if isinstance(node, N.Arith) else [
                node.operand]
        elif isinstance(node, N.Compare):
            sides = [node.left, node.right]
        elif isinstance(node, N.InRange):
            sides = [node.expr, node.lo, node.hi]
        else:
            sides = [node.expr]
        values = [compile_row_expr(e)(event) for e in sides]
        said = []
        strings = []
        for e, v in zip(sides, values, strict=True):
            if isinstance(e, N.Attr):
                said.append(f"attribute {e.name!r} is {_value(v)}")
                if isinstance(v, str):
                    strings.append(repr(e.name))
            elif not isinstance(e, N.Literal):
                said.append(f"`{self.text[e.span.start:e.span.end]}` is {_value(v)}"
                            if self.text is not None and e.span.end > e.span.start
                            else f"an operand is {_value(v)}")
        details = f": {'; '.join(said)}" if said else ""
        where = text or " a condition"
        timed = [w for w in (_moment(v) for v in values) if w]
        if timed and not (isinstance(node, N.Arith | N.Neg) and strings):
            return self.time_message(node, values, timed, where, details, event, pos)
        if isinstance(node, N.Arith | N.Neg):
            what = f"does arithmetic on a string in{where}"
        else:
            what = f"compares a string with a number in{where}"
        them = "them" if len(strings) > 1 else "it"
        if strings:
            fix = (f"If {' and '.join(strings)} should hold numbers, read {them} as numbers: "
                   "give the reader a schema, or cast the column (float(...) on each event; "
                   "pyarrow.compute.cast for Arrow).")
        else:
            numbers = [repr(e.name) for e in sides if isinstance(e, N.Attr)]
            them = "them" if len(numbers) > 1 else "it"
            fix = (f"{' and '.join(numbers) or 'The attribute'} holds numbers here: compare "
                   f"{them} with a number (no quotes), or, if {them} should hold strings, give "
                   "the reader a schema or cast the column (str(...)).")
        return (f"Event {pos} {what}{details}. A string and a number never compare (nor add "
                "up): the condition is unknown, so it does not hold, and such events silently "
                f"match nothing. {fix} The event: {show_event(event)}. (Said once per "
                "evaluation.)")

    @staticmethod
    def time_message(node: Any, values: list[Any], timed: list[str], where: str,
                     details: str, event: Mapping[str, Any], pos: int) -> str:
        """The warning for a time or duration that meets a value it cannot mean."""
        if isinstance(node, N.Arith | N.Neg):
            what = f"does arithmetic that has no value on {timed[0]} in{where}"
        else:
            others = [_kind_word(v) for v in values if v is not None and not _moment(v)]
            other = others[0] if others else timed[-1] if len(timed) > 1 else (
                "strings that write no time" if isinstance(node, N.InSet) else "another value")
            what = f"compares {timed[0]} with {other} in{where}"
        return (f"Event {pos} {what}{details}. A time compares with a time, or with a string "
                "that writes one in ISO 8601 ('2024-05-01 09:00:00'; with an offset for a "
                "time with a zone); times subtract to a duration, which compares with a "
                "number of seconds or an INTERVAL (b[ts - a.ts >= 60], b[ts > a.ts + INTERVAL "
                "1 MINUTE]); a time plus or minus a number of seconds, or an INTERVAL, is a "
                "time. Anything else is unknown: the condition does not hold, and such events "
                "silently match nothing. If the attribute holds something else than meant, "
                "give the reader a schema or cast the column. The event: "
                f"{show_event(event)}. (Said once per evaluation.)")


def _watched(atoms: tuple[Atom, ...], relevant: dict[int, frozenset[str]]
             ) -> tuple[tuple[int, frozenset[int], tuple[int, ...], bool], ...]:
    """See :attr:`ValueTypes.watched`. A mix makes an atom unknown; but ``x IN RANGE(lo,
    hi)`` is false when ``x`` mixes with one bound and the other is above (or below) it, so
    such an atom is looked into when false too, unless its bounds are literals of one kind
    other than strings (with which ``x`` mixes alike)."""
    type_atom = {a.name: k for k, a in enumerate(atoms) if isinstance(a, TypeIs)}
    out = []
    for k, a in enumerate(atoms):
        types = relevant.get(id(a))
        if not types:
            continue
        codes = frozenset({UNKNOWN, FALSE}) if isinstance(a, N.InRange) and not _alike(
            a.lo, a.hi) else frozenset({UNKNOWN})
        out.append((k, codes, tuple(type_atom[t] for t in sorted(types) if t in type_atom),
                    any(t not in type_atom for t in types)))
    return tuple(out)


def _alike(lo: N.Expr, hi: N.Expr) -> bool:
    """Whether two bounds are literals of one kind, not NULL, not strings."""
    if not (isinstance(lo, N.Literal) and isinstance(hi, N.Literal)):
        return False
    a, b = norm(lo.value), norm(hi.value)
    return a is not None and b is not None and value_kind(a) == value_kind(b) and type(a) is not str


def _moment(v: Any) -> str:
    """'a time' or 'a duration' for such a value, else ''."""
    if isinstance(v, dt.timedelta):
        return "a duration"
    return "a time" if isinstance(v, dt.date | dt.datetime) else ""


def _kind_word(v: Any) -> str:
    if isinstance(v, str):
        return "a string"
    if isinstance(v, bool):
        return "a boolean"
    return "a number" if isinstance(v, int | float) else f"a {type(v).__name__}"


def _value(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, dt.timedelta):
        secs = v / dt.timedelta(seconds=1)
        return f"{secs:g} seconds (a duration)"
    shown = show_event({"": v})[len("{'': "):-1]
    return f"{shown} ({type(v).__name__})"


# ---------------------------------------------------------------------- between events

_NUMBER_TEXT = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*")


class BetweenValues:
    """Conditions between events (:mod:`ceql.predicates.between`): the first comparison of
    values that never compare (a string and a number, a time and a number, ...), or of two
    strings that both write numbers with ``<``, ``>``, ... (compared as text: ``'9' > '10'``),
    is warned of once (:class:`ValueTypeWarning`). The engines pass :attr:`sink` to each
    condition they check; it listens while a feed reads events (:meth:`feeding`), not when
    ``advance`` or ``close`` decide conditions."""

    __slots__ = ("done", "sink", "text", "texts")

    def __init__(self, text: str | None) -> None:
        self.text = text
        self.done = False
        self.texts = 0  # ordered comparisons of strings that were not both numbers
        #: the listener conditions are given now (:meth:`hook`; None: nobody listens)
        self.sink: Listener | None = None

    def feeding(self, on: bool) -> None:
        """A feed starts (``on``) or ends: listen while it reads events, unless done."""
        self.sink = self.hook if on and not self.done else None

    def hook(self, node: Any, a: Any, b: Any) -> None:
        """Comparison ``node`` met ``a`` and ``b`` (a
        :data:`~ceql.predicates.between.Listener`)."""
        if self.done:
            return
        if type(a) is str and type(b) is str:
            if not (_NUMBER_TEXT.fullmatch(a) and _NUMBER_TEXT.fullmatch(b)):
                self.texts += 1
                if self.texts >= TEXT_CHECKS:
                    self.stop()
                return
            message = self.text_message(node, a, b)
        else:
            message = self.clash_message(node, a, b)
        self.stop()
        warn(message, ValueTypeWarning)

    def stop(self) -> None:
        """Listen no more."""
        self.done = True
        self.sink = None

    def shown(self, e: Any) -> str:
        span = getattr(e, "span", None)
        if self.text is not None and span is not None and span.end > span.start:
            return self.text[span.start:span.end]
        if isinstance(e, N.Attr):
            return e.name if e.var is None else f"{e.var}.{e.name}"
        return "a comparison" if isinstance(e, N.Compare) else "an operand"

    def text_message(self, node: N.Compare, a: str, b: str) -> str:
        """The warning for two strings that write numbers, compared in order."""
        op = norm_op(node.op)
        as_text = PY_CMP[op](a, b)
        as_numbers = PY_CMP[op](float(a), float(b))
        though = (f", though {a.strip()} {op} {b.strip()} is {str(as_numbers).lower()} as numbers"
                  if as_text != as_numbers else "")
        names = [repr(e.name) for e in (node.left, node.right) if isinstance(e, N.Attr)]
        what = " and ".join(dict.fromkeys(names)) or "the values"
        return (f"A condition between events, `{self.shown(node)}`, compares strings that "
                f"write numbers: {what} is compared as text, character by character, and "
                f"{a!r} {op} {b!r} is {str(as_text).lower()} as text{though}. If they are "
                "numbers, read them as numbers: give the reader a schema, or cast the column "
                "(float(...) on each event; pyarrow.compute.cast for Arrow; CAST in Spark). "
                "(Said once per evaluation.)")

    def clash_message(self, node: N.Compare, a: Any, b: Any) -> str:
        """The warning for values of kinds that never compare."""
        timed = [w for w in (_moment(a), _moment(b)) if w]
        if timed:
            other = _moment(b) if _moment(a) else _moment(a)
            other = other or _kind_word(b if _moment(a) else a)
            what = f"compares {timed[0]} with {other}"
            why = ("A time compares with a time, or with a string that writes one in ISO 8601; "
                   "times subtract to a duration, which compares with a number of seconds or "
                   "an INTERVAL (b[ts - a.ts >= 60]).")
        else:
            what = "compares a string with a number"
            why = "A string and a number never compare."
        return (f"A condition between events compares values that never compare: "
                f"`{self.shown(node)}` {what} (`{self.shown(node.left)}` is {_value(a)}, "
                f"`{self.shown(node.right)}` is {_value(b)}). {why} Such a comparison is "
                "unknown: the condition does not hold, and such events silently match "
                "nothing. Give the reader a schema or cast the column so that each attribute "
                "holds what the condition means. (Said once per evaluation.)")
