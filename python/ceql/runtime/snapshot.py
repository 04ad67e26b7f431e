"""Saving and restoring an evaluation: only what a later event can still use.

A snapshot is ``MAGIC``, the format number (two bytes), a SHA-256 digest of the rest (16
bytes) and the rest: plain data in ceql's own encoding (:mod:`ceql.runtime.codec`, which runs
no code when read) — the format number, a fingerprint of the query (its IR, spans excluded),
the evaluator's options, the clock, and per live partition its key, strategy state and active
automaton states *by content* (:meth:`~ceql.automata.DFA.state_key`, so the numbering of
another process does not matter), with the tECS below them flattened into a table (children
first, so no recursion on long chains, and shared nodes stay shared). Before saving, runs and
union branches that left the window are cut and empty partitions dropped, exactly as the next
event would. It also keeps the names seen (bounded, so :meth:`~ceql.Evaluator.unseen` goes on
where it was), whether the string-vs-number warning was given, the matches waiting for a
trailing NOT, and, with ``keep_events``, the events later matches can include.

Damage is found by the digest (:class:`~ceql.errors.CeqlInputError`, never another answer).
Formats 1 and 2 (ceql before 2026-12) were pickles: they are still read, by an unpickler that
builds only the types those snapshots hold (no other callable can be named), so streams saved
before the change restart; a snapshot saved again is format 3.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import pickle
import struct
import weakref
from collections import deque
from typing import Any, NamedTuple

from ..constants import TIME_UNIT_PER_SECOND, WITHIN_ATTR, WITHIN_EVENTS
from ..errors import CeqlInputError
from ..ir import canonical_repr
from .codec import Malformed, Unencodable, decode, encode, int_column
from .engine import Engine
from .partitions import Partition, canonical_key
from .state import Compiled, Evaluation
from .tecs import KIND_POS, LABEL, LEFT, MAX_START_KEY, NEXT, RIGHT, START_TIME, Node

__all__ = ["FORMAT", "MAGIC", "Options", "dump", "fingerprint", "load", "options"]

MAGIC = b"CEQLSNAP"
FORMAT = 3  #: bumped whenever the layout below or the meaning of state keys changes
#: format 3 with the dense engine's rows (``dense``): a ceql that reads only format 3 would
#: restore it into another engine, without those rows, so it must refuse it
DENSE_FORMAT = 4
#: format 4 with the join engine's rows (``join``), which a ceql reading format 4 would restore
#: into its register runtime, without them
JOIN_FORMAT = 5
_READS = (1, 2, 3, 4, 5)  # formats this version restores
_HEAD = struct.Struct(">H16s")  # the format number, the digest of the body


class Options(NamedTuple):
    """The evaluator options a snapshot was taken with."""

    time: str | None
    type_key: str
    stream_key: str
    time_unit: str
    time_format: str | None = None
    keep_events: bool = False


_FINGERPRINTS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def fingerprint(query: Compiled) -> str:
    """A digest of the query's IR: snapshots restore only into the same query (cached per
    query object, which is immutable: streams save and restore per key and micro-batch)."""
    try:
        return _FINGERPRINTS[query]
    except (KeyError, TypeError):
        pass
    digest = hashlib.sha256(canonical_repr(query.ast).encode("utf-8")).hexdigest()[:32]
    try:
        _FINGERPRINTS[query] = digest
    except TypeError:  # a query object without weak references: not cached
        pass
    return digest


# ---------------------------------------------------------------------- saving

def _now_key(ev: Evaluation, P: Partition) -> Any:
    """The window key of the partition's latest event (a lower bound on every later one)."""
    if ev.wkind == WITHIN_EVENTS:
        return P.n - 1
    if ev.wkind == WITHIN_ATTR:
        return ev.clock.last_wattr
    if ev.time is not None:
        return ev.clock.last_time
    return ev.offset - 1


def _prune(ev: Evaluation) -> None:
    eps = ev.prune_eps
    for P in ev.parts:
        P.catch_up(ev.parts.epoch)
        if eps is None:
            continue
        now = _now_key(ev, P)
        if now is None:
            continue
        fifo = P.fifo
        lim = now - eps
        while fifo and fifo[0][0] < lim:
            fifo.popleft()[1][RIGHT] = None
        kept: dict[int, list[Node]] = {}
        for d, ul in P.states.items():
            if now - ul[0][MAX_START_KEY] > eps:
                continue
            while now - ul[-1][MAX_START_KEY] > eps:
                ul.pop()
            kept[d] = ul
        if len(kept) != len(P.states):
            P.states = kept
            P.sig = None
    if ev.wkind != WITHIN_EVENTS and ev.eps is not None:
        last = ev.clock.last_wattr if ev.wkind == WITHIN_ATTR else (
            ev.clock.last_time if ev.time is not None else ev.offset - 1)
        if last is not None:
            ev.sweep(last)
    else:
        ev.sweep(0)


class _Flattener:
    """Numbers tECS nodes children-first; a node reached twice keeps one number."""

    def __init__(self) -> None:
        self.ids: dict[int, int] = {}
        self.table: list[tuple[Any, ...]] = []
        self.labels: dict[frozenset[str], int] = {}
        self.keep: list[Node] = []  # holds nodes so their ids stay unique while flattening

    def label(self, vs: frozenset[str]) -> int:
        k = self.labels.get(vs)
        if k is None:
            k = self.labels[vs] = len(self.labels)
        return k

    def number(self, root: Node) -> int:
        """The number of ``root``, numbering every node below it first (depth-first, O(nodes))."""
        ids = self.ids
        hit = ids.get(id(root))
        if hit is not None:
            return hit
        # (node, its children, how many of them are numbered); the tECS is acyclic, so a node
        # met again is either numbered already or on this path's stack — never the latter
        stack: list[tuple[Node, list[Node], int]] = [(root, _children(root), 0)]
        while stack:
            n, kids, i = stack[-1]
            while i < len(kids) and id(kids[i]) in ids:
                i += 1
            if i < len(kids):
                stack[-1] = (n, kids, i + 1)
                stack.append((kids[i], _children(kids[i]), 0))
                continue
            stack.pop()
            if n[KIND_POS] < 0:
                right = n[RIGHT]
                entry: tuple[Any, ...] = ("u", n[0], n[1], ids[id(n[LEFT])],
                                          -1 if right is None else ids[id(right)])
            elif n[NEXT] is not None:
                entry = ("o", n[0], n[1], n[KIND_POS], ids[id(n[NEXT])], self.label(n[LABEL]))
            else:
                entry = ("b", n[0], n[1], n[KIND_POS], n[START_TIME])
            ids[id(n)] = len(self.table)
            self.table.append(entry)
            self.keep.append(n)
        return ids[id(root)]


def _columns(table: list[tuple[Any, ...]]) -> dict[str, Any]:
    """The flattened tECS as columns (packed where they hold only integers): a node's kind
    (``u``nion, ``o``utput, ``b``ottom), max start, max start key, then per kind its
    position or left child, its next or right child (-1: none), its label, and the start
    times of the bottoms in order."""
    kinds = "".join(e[0] for e in table)
    starts = [e[1] for e in table]
    keys = [e[2] for e in table]
    xs = [e[3] for e in table]
    ys = [e[4] if e[0] != "b" else -1 for e in table]
    labels = [e[5] if e[0] == "o" else -1 for e in table]
    times = [e[4] for e in table if e[0] == "b"]
    return {"kinds": kinds, "starts": int_column(starts), "keys": int_column(keys),
            "xs": int_column(xs), "ys": int_column(ys), "labels": int_column(labels),
            "times": int_column(times)}


def _rows(nodes: Any) -> Any:
    """The flattened tECS entries of a snapshot: format 3's columns, or format 1/2's list."""
    if isinstance(nodes, list):
        return nodes
    times = iter(nodes["times"])
    return (("b", a, k, x, next(times)) if kind == "b" else (kind, a, k, x, y, lab)
            for kind, a, k, x, y, lab in zip(nodes["kinds"], nodes["starts"], nodes["keys"],
                                             nodes["xs"], nodes["ys"], nodes["labels"],
                                             strict=True))


def _children(n: Node) -> list[Node]:
    if n[KIND_POS] < 0:
        return [n[LEFT]] if n[RIGHT] is None else [n[LEFT], n[RIGHT]]
    return [] if n[NEXT] is None else [n[NEXT]]


def _same(key: Any) -> Any:
    return key


def _run_key(key: Any) -> Any:
    """A register run's key from a snapshot: ``(state, registers)``."""
    if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], int)
            and isinstance(key[1], tuple)):
        raise CeqlInputError("The ceql snapshot is damaged (a run is not what a snapshot "
                             "of this query holds); take a new one.")
    return key


def dump(ev: Evaluation, engine: Engine) -> bytes:
    """The evaluation's live state, and that of its engine stack, as bytes."""
    _prune(ev)
    dfa = ev.dfa
    # register runs are keyed by content already: (CEA state, registers)
    key_of: Any = dfa.state_key if ev.core.plan is None else _same
    flat = _Flattener()
    parts = []
    for P in ev.parts:
        states = [(key_of(d), int_column([flat.number(n) for n in ul]))
                  for d, ul in P.states.items()]
        fifo = [(k, flat.ids[id(u)]) for k, u in (P.fifo or ()) if id(u) in flat.ids]
        parts.append((P.key, dfa.global_key(P.g), P.n, states,
                      (int_column([k for k, _ in fifo]), int_column([i for _, i in fifo]))))
    clock = ev.clock
    layers: dict[str, Any] = {}
    engine.save(layers)
    fmt = JOIN_FORMAT if "join" in layers else DENSE_FORMAT if "dense" in layers else FORMAT
    payload = {
        "format": fmt,
        "fingerprint": fingerprint(ev.query),
        "options": tuple(Options(ev.time, ev.type_key, ev.stream_key, ev.time_unit,
                                 ev.time_format, ev.keep_events)),
        "offset": ev.offset,
        "since_sweep": ev.since_sweep,
        "epoch": ev.parts.epoch,
        "eps": ev.eps,
        "clock": (clock.is_ts, clock.tz, clock.as_date, clock.last_time, clock.last_wattr),
        "labels": [None if vs is None else tuple(sorted(vs)) for vs in flat.labels],
        "nodes": _columns(flat.table),
        "partitions": parts,
        "names": ev.names.state(),
        "mixed_done": ev.mixed.done,
        "kept": layers.get("kept"),
        "barriers": layers["barriers"],
        "edges": layers.get("edges"),
        "closed": ev.closed,
    }
    for chain in ("dense", "join"):
        if chain in layers:
            payload[chain] = layers[chain]
    try:
        body = encode(payload)
    except Unencodable as exc:
        engine.check_saveable()  # names the event a snapshot cannot hold
        raise CeqlInputError(
            f"Cannot save the evaluation: it holds {exc} (a partition key, a time, a value a "
            "condition keeps, or with keep_events an event), which a snapshot cannot hold; "
            "use plain values (numbers, text, bytes, decimals, dates and times, lists and "
            "dicts of those).") from None
    return MAGIC + _HEAD.pack(fmt, _digest(body)) + body


def _digest(body: bytes) -> bytes:
    return hashlib.sha256(body).digest()[:16]


# ---------------------------------------------------------------------- restoring

def _payload(data: bytes) -> dict[str, Any]:
    if not isinstance(data, (bytes, bytearray, memoryview)) or bytes(data[:len(MAGIC)]) != MAGIC:
        raise CeqlInputError("Not a ceql snapshot: pass the bytes Evaluator.snapshot() returned.")
    data = bytes(data)
    rest = data[len(MAGIC):]
    if rest[:1] == b"\x80":  # formats 1 and 2: a pickle
        payload = _legacy(rest)
    else:
        if len(rest) < _HEAD.size:
            raise CeqlInputError("The ceql snapshot is damaged (cut short); take a new one.")
        fmt, digest = _HEAD.unpack_from(rest)
        if fmt not in _READS:
            raise CeqlInputError(
                f"The snapshot has format {fmt}; this ceql reads formats "
                f"{', '.join(map(str, _READS))}. Restore it with the ceql version that took it.")
        body = rest[_HEAD.size:]
        if _digest(body) != digest:
            raise CeqlInputError("The ceql snapshot is damaged (its checksum does not match "
                                 "its contents); take a new one.")
        try:
            payload = decode(body)
        except Malformed as exc:
            raise CeqlInputError(f"The ceql snapshot is damaged ({exc}); take a new one.") \
                from None
    if not isinstance(payload, dict) or "format" not in payload:
        raise CeqlInputError("The ceql snapshot is damaged (no format number); take a new one.")
    if payload["format"] not in _READS:
        raise CeqlInputError(
            f"The snapshot has format {payload['format']!r}; this ceql reads formats "
            f"{', '.join(map(str, _READS))}. Restore it with the ceql version that took it.")
    return payload


#: what a format 1 or 2 snapshot (a pickle) may name: the types its data held
_LEGACY = {
    ("builtins", "tuple"), ("builtins", "list"), ("builtins", "dict"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "bytearray"), ("builtins", "getattr"),
    ("datetime", "datetime"), ("datetime", "date"), ("datetime", "time"),
    ("datetime", "timedelta"), ("datetime", "timezone"), ("decimal", "Decimal"),
    ("fractions", "Fraction"), ("zoneinfo", "ZoneInfo"), ("ceql.runtime.match", "Match"),
    ("ceql.runtime.edges", "_LastWait"),
}
#: ... and the class attributes (``getattr``) their reductions read
_LEGACY_ATTRS = {("ZoneInfo", "_unpickle")}


class _LegacyUnpickler(pickle.Unpickler):
    """Builds only the types of :data:`_LEGACY`: a crafted pickle can name no other code."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _LEGACY:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a ceql snapshot")
        if name == "getattr":
            return _safe_getattr
        return super().find_class(module, name)


def _safe_getattr(obj: Any, name: str) -> Any:
    if (getattr(obj, "__name__", None), name) not in _LEGACY_ATTRS:
        raise pickle.UnpicklingError(f"reading {name!r} is not part of a ceql snapshot")
    return getattr(obj, name)


def _legacy(rest: bytes) -> Any:
    try:
        return _LegacyUnpickler(io.BytesIO(rest)).load()
    except Exception as exc:
        raise CeqlInputError(f"The ceql snapshot is damaged ({exc}); take a new one.") from None


def _damaged(exc: Exception) -> CeqlInputError:
    return CeqlInputError(f"The ceql snapshot is damaged ({type(exc).__name__}: {exc}); take a "
                          "new one.")


def options(query: Compiled, data: bytes) -> tuple[Options, dict[str, Any]]:
    """The options of the evaluator that took ``data``, once ``data`` is checked against
    ``query``, and the unpickled snapshot (for :func:`load`)."""
    payload = _payload(data)
    if payload.get("fingerprint") != fingerprint(query):
        raise CeqlInputError(
            "The snapshot was taken from another query: restore it with the query whose "
            "evaluator took it.")
    try:
        opts = Options(*payload["options"])
    except (KeyError, TypeError) as exc:
        raise _damaged(exc) from None
    if not (all(isinstance(v, str) for v in (opts.type_key, opts.stream_key, opts.time_unit))
            and all(v is None or isinstance(v, str) for v in (opts.time, opts.time_format))
            and opts.time_unit in TIME_UNIT_PER_SECOND and isinstance(opts.keep_events, bool)):
        raise CeqlInputError("The ceql snapshot is damaged (its options are not what a "
                             "snapshot holds); take a new one.")
    return opts, payload


def load(ev: Evaluation, engine: Engine, payload: dict[str, Any]) -> None:
    """Put the state of a snapshot (as :func:`options` read it) into a fresh evaluation of the
    same query and its engine stack."""
    try:
        _load(ev, engine, payload)
    except CeqlInputError:
        raise
    except Exception as exc:  # a snapshot that unpickles but does not hold what it should
        raise _damaged(exc) from None


def _number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _check(payload: dict[str, Any]) -> None:
    """Refuse a payload whose plain fields are not what a snapshot holds (the tECS and
    partitions are checked as they are rebuilt)."""
    counts = [payload[k] for k in ("offset", "since_sweep", "epoch")]
    is_ts, tz, as_date, last_time, last_wattr = payload["clock"]
    if not (all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)
            and (payload["eps"] is None or _number(payload["eps"]))
            and is_ts in (None, True, False) and isinstance(as_date, bool)
            and (tz is None or isinstance(tz, _dt.tzinfo))
            and all(t is None or _number(t) for t in (last_time, last_wattr))):
        raise CeqlInputError("The ceql snapshot is damaged (its counters or clock are not "
                             "what a snapshot holds); take a new one.")


def _load(ev: Evaluation, engine: Engine, payload: dict[str, Any]) -> None:
    _check(payload)
    dfa = ev.dfa
    labels = [None if vs is None else frozenset(vs) for vs in payload["labels"]]
    nodes: list[Node] = []
    for e in _rows(payload["nodes"]):
        kind = e[0]
        if kind == "u":
            nodes.append([e[1], e[2], -1, nodes[e[3]], None if e[4] < 0 else nodes[e[4]]])
        elif kind == "o":
            nodes.append((e[1], e[2], e[3], nodes[e[4]], labels[e[5]]))
        else:
            nodes.append((e[1], e[2], e[3], None, e[4]))
    id_of: Any = dfa.state_id if ev.core.plan is None else _run_key
    ev.offset = payload["offset"]
    ev.since_sweep = payload["since_sweep"]
    ev.set_eps(payload["eps"])
    clock = ev.clock
    clock.is_ts, clock.tz, clock.as_date, clock.last_time, clock.last_wattr = payload["clock"]
    parts = ev.parts
    parts.epoch = payload["epoch"]
    for key, gkey, n, states, fifo in payload["partitions"]:
        P = parts.get(canonical_key(key) or key)  # (a decoded NaN is a new object)
        P.g = dfa.global_id(gkey)
        P.n = n
        P.states = {id_of(skey): [nodes[i] for i in ul] for skey, ul in states}
        if P.fifo is not None:
            if isinstance(fifo, tuple):  # format 3: two columns
                fifo = zip(*fifo, strict=True)
            P.fifo = deque((k, nodes[i]) for k, i in fifo)
    ev.closed = bool(payload.get("closed", False))
    if "names" in payload:  # format 2
        ev.names.load(payload["names"])
        ev.mixed.done = ev.mixed.done or bool(payload["mixed_done"])
    engine.load(payload)  # the matches waiting for a NOT, enumerator barriers, kept events
    ev.attrs.give_up()  # the events before the snapshot are not known: say nothing
