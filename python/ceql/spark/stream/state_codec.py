"""A stream key's state as bytes in Spark's state store, and back: an explicit, versioned
format that decoding runs no code for.

Format 1 is :data:`MAGIC`, the format number (one byte), the SHA-256 of the body and the body:
:func:`ceql.runtime.encode_data`'s plain data (numbers, text, bytes, tuples, dicts) holding the
:class:`~ceql.spark.stream.keystate.KeyState`'s counters and timers, its held rows and the runner's
kept rows as Arrow IPC streams, and the engine as its own snapshot
(:meth:`ceql.Evaluator.snapshot`); a MATCH_RECOGNIZE key's engine is a record
``{"recognize": <the evaluator's snapshot>, "bound": <the row of the body's Spark constants, as
Arrow IPC, or None>}`` (:mod:`ceql.spark.stream.recognize`). The query is not stored: the
state is read with the running query's plan, and the engine's snapshot refuses one of another query.

Checkpoints written by ceql before format 1 hold a pickle of the whole ``KeyState``; they are
read by an unpickler that builds only the types such a pickle holds (:data:`LEGACY`), so a
crafted state entry can name no other code, and are written back in format 1.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from typing import Any

import pyarrow as pa

from ceql.errors import CeqlError
from ceql.runtime import MalformedData, decode_data, encode_data
from ceql.spark.errors import MatchCeqlError
from ceql.spark.stream.keystate import CeqlEngine, KeyState, StreamPlan
from ceql.spark.stream.recognize import RecognizeEngine, RecognizeRunner
from ceql.spark.udtf.runner import MatchRunner, RunnerState

__all__ = ["FORMAT", "LEGACY", "MAGIC", "dump_state", "load_state"]

#: The first bytes of a key's state (a pickle starts with 0x80, never with these).
MAGIC = b"ceql-key-state\x00"
#: The format :func:`dump_state` writes.
FORMAT = 1
_DIGEST = 32

#: What a pickled key state of an earlier ceql may name: the types its data held.
LEGACY = frozenset({
    ("ceql.spark._keystate", "KeyState"), ("ceql.spark._runner", "MatchRunner"),
    ("ceql.spark._spec", "MatchSpec"), ("ceql.spark._ties", "TieWatch"),
    ("ceql.query", "_restore"), ("ceql.runtime.evaluator", "_restore"),
    ("pyarrow.lib", "_reconstruct_record_batch"), ("pyarrow.lib", "_reconstruct_table"),
    ("pyarrow.lib", "_restore_array"), ("pyarrow.lib", "chunked_array"),
    ("pyarrow.lib", "field"), ("pyarrow.lib", "py_buffer"), ("pyarrow.lib", "schema"),
    ("pyarrow.lib", "type_for_alias"),
})

#: Where the modules those pickles name live now (``ceql.spark`` by concern).
_MOVED = {"ceql.spark._keystate": "ceql.spark.stream.keystate",
          "ceql.spark._runner": "ceql.spark.udtf.runner",
          "ceql.spark._spec": "ceql.spark.udtf.ceql_plan",
          "ceql.spark._ties": "ceql.spark.udtf.ties"}


def dump_state(ks: KeyState) -> bytes:
    """``ks`` as bytes of format :data:`FORMAT` (between micro-batches)."""
    runner: dict[str, Any] | None = None
    if isinstance(ks.runner, RecognizeRunner):
        bound = ks.runner.bound
        runner = {"recognize": ks.runner.snapshot(),
                  "bound": None if bound is None else _ipc(bound)}
    elif isinstance(ks.runner, MatchRunner):
        r = ks.runner.saved()
        runner = {"engine": r.engine, "kept": tuple(_ipc(b) for b in r.kept), "base": r.base,
                  "fed": r.fed, "where": r.where, "watching": r.watching,
                  "last": None if r.last is None else _ipc(r.last)}
    elif ks.runner is not None:
        raise TypeError(f"no state format for a {type(ks.runner).__name__} engine")
    body = encode_data({
        "buckets": ks.buckets, "arrivals": ks.arrivals, "last_us": ks.last_us, "late": ks.late,
        "timers": ks.timers, "newest_us": ks.newest_us, "released_us": ks.released_us,
        "held": None if ks.held is None else _ipc(ks.held), "runner": runner})
    return MAGIC + bytes((FORMAT,)) + hashlib.sha256(body).digest() + body


def load_state(data: bytes, plan: StreamPlan) -> KeyState:
    """The key state ``data`` holds (any format this ceql reads), continuing ``plan``'s query."""
    if data[:1] == b"\x80":
        return _legacy(data)
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 1 + _DIGEST:
        raise _damaged("it is not a ceql key state", plan.engine.label)
    fmt = data[len(MAGIC)]
    if fmt != FORMAT:
        raise MatchCeqlError(
            f"{plan.engine.label}: this checkpoint's key state has format {fmt}, and this ceql "
            f"reads format {FORMAT} (and the pickles of earlier versions); run the query with the "
            "ceql version that wrote the checkpoint, or start from a new checkpoint.")
    start = len(MAGIC) + 1
    digest, body = data[start:start + _DIGEST], data[start + _DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        raise _damaged("its checksum does not match", plan.engine.label)
    try:
        return _built(decode_data(body), plan)
    except MatchCeqlError:
        raise
    except CeqlError as exc:  # the engine's snapshot refused (another query, damage)
        raise MatchCeqlError(f"{plan.engine.label}: this checkpoint's key state cannot "
                             f"continue the query: {exc}") from None
    except (MalformedData, KeyError, TypeError, ValueError, pa.ArrowException) as exc:
        raise _damaged(f"{type(exc).__name__}: {exc}", plan.engine.label) from None


def _built(d: Any, plan: StreamPlan) -> KeyState:
    if not isinstance(d, dict):
        raise TypeError("the body is not a record")
    ks = KeyState(_int(d["buckets"]))
    ks.arrivals, ks.late = _int(d["arrivals"]), _int(d["late"])
    ks.last_us, ks.newest_us, ks.released_us = (
        _opt_int(d["last_us"]), _opt_int(d["newest_us"]), _opt_int(d["released_us"]))
    ks.timers = tuple(_int(t) for t in d["timers"])
    ks.held = None if d["held"] is None else _table(d["held"])
    r = d["runner"]
    if r is not None and "recognize" in r:
        if not isinstance(plan.engine, RecognizeEngine):
            raise TypeError("a MATCH_RECOGNIZE engine's state in a MATCH_CEQL query")
        bound = (None if r["bound"] is None
                 else _table(r["bound"]).combine_chunks().to_batches()[0])
        snapshot = r["recognize"]
        ks.runner = RecognizeRunner(plan.engine, bound,
                                    None if snapshot is None else _bytes(snapshot))
    elif r is not None:
        if not isinstance(plan.engine, CeqlEngine):
            raise TypeError("a MATCH_CEQL engine's state in a MATCH_RECOGNIZE query")
        kept = [b for blob in r["kept"] for b in _table(blob).to_batches()]
        last = None if r["last"] is None else _table(r["last"]).combine_chunks().to_batches()[0]
        ks.runner = MatchRunner(plan.engine.spec, RunnerState(
            _bytes(r["engine"]), kept, _int(r["base"]), _int(r["fed"]), str(r["where"]),
            bool(r["watching"]), last))
    return ks


def _int(v: Any) -> int:
    if type(v) is not int:
        raise TypeError(f"{v!r} is not an integer")
    return v


def _opt_int(v: Any) -> int | None:
    return None if v is None else _int(v)


def _bytes(v: Any) -> bytes:
    if not isinstance(v, bytes):
        raise TypeError(f"{type(v).__name__} is not bytes")
    return v


def _ipc(data: pa.Table | pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as w:
        w.write(data)
    return bytes(sink.getvalue().to_pybytes())


def _table(blob: Any) -> pa.Table:
    t = pa.ipc.open_stream(_bytes(blob)).read_all()
    t.validate(full=True)
    return t


class _LegacyUnpickler(pickle.Unpickler):
    """Builds only the types of :data:`LEGACY`."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in LEGACY:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a ceql key state")
        return super().find_class(_MOVED.get(module, module), name)


def _legacy(data: bytes) -> KeyState:
    try:
        ks = _LegacyUnpickler(io.BytesIO(data)).load()
    except CeqlError as exc:
        raise MatchCeqlError(f"MATCH_CEQL: this checkpoint's key state cannot continue the "
                             f"query: {exc}") from None
    except Exception as exc:
        raise _damaged(f"{type(exc).__name__}: {exc}") from None
    if not isinstance(ks, KeyState):
        raise _damaged(f"it holds a {type(ks).__name__}, not a key state")
    if ks.held is not None:
        ks.held.validate(full=True)
    return ks


def _damaged(why: str, label: str = "MATCH_CEQL") -> MatchCeqlError:
    return MatchCeqlError(
        f"{label}: a key state in this checkpoint is damaged ({why}); start the query from "
        "a new checkpoint (or restore the checkpoint's files).")
