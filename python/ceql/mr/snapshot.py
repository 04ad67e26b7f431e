"""The bytes of a MATCH_RECOGNIZE evaluator's snapshot: ``MAGIC``, the format number (two
bytes), a SHA-256 digest of the rest (16 bytes), and the rest — plain data in ceql's own
encoding (:mod:`ceql.runtime.codec`, which runs no code when read): the format number, a digest
of the query's canonical text, and the evaluator's state (:mod:`ceql.mr.evaluator` says what).

A snapshot restores only into the query that took it; damaged bytes are found by the digest.
Every refusal is a :class:`~ceql.errors.CeqlInputError` saying which.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

from ..errors import CeqlInputError
from ..runtime.codec import Malformed, Unencodable, decode, encode

__all__ = ["FORMAT", "MAGIC", "dump", "load", "query_digest"]

MAGIC = b"CEQLMRSN"
FORMAT = 1  #: bumped whenever the state's layout or meaning changes
_HEAD = struct.Struct(">H16s")


def query_digest(text: str) -> str:
    """A digest of a query's canonical text: the query a snapshot belongs to."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def dump(text: str, state: dict[str, Any]) -> bytes:
    """The snapshot of ``state`` (plain data) for the query whose canonical text is
    ``text``."""
    try:
        body = encode({"format": FORMAT, "query": query_digest(text), "state": state})
    except Unencodable as exc:
        raise CeqlInputError(f"A row kept for later matches holds {exc}, which a snapshot "
                             "cannot save: give rows of plain values (numbers, text, "
                             "decimals, times, bytes)") from None
    return MAGIC + _HEAD.pack(FORMAT, hashlib.sha256(body).digest()[:16]) + body


def load(text: str, data: bytes) -> Any:
    """The state saved in ``data`` by the query whose canonical text is ``text``."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CeqlInputError(f"A MATCH_RECOGNIZE snapshot is bytes, not "
                             f"{type(data).__name__}")
    data = bytes(data)
    if not data.startswith(MAGIC):
        raise CeqlInputError("These bytes are not a MATCH_RECOGNIZE evaluator's snapshot (it "
                             "begins with " + repr(MAGIC) + "): pass what snapshot() returned")
    head = data[len(MAGIC):len(MAGIC) + _HEAD.size]
    if len(head) < _HEAD.size:
        raise CeqlInputError("The MATCH_RECOGNIZE snapshot is truncated (its header is cut)")
    fmt, digest = _HEAD.unpack(head)
    if fmt != FORMAT:
        raise CeqlInputError(f"The MATCH_RECOGNIZE snapshot has format {fmt}; this ceql reads "
                             f"format {FORMAT}: restore it with the ceql that took it")
    body = data[len(MAGIC) + _HEAD.size:]
    if hashlib.sha256(body).digest()[:16] != digest:
        raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (its digest does not "
                             "match its content): restore an intact copy")
    try:
        saved = decode(body)
    except Malformed as exc:
        raise CeqlInputError(f"The MATCH_RECOGNIZE snapshot is damaged ({exc})") from None
    if not isinstance(saved, dict) or set(saved) != {"format", "query", "state"} \
            or saved["format"] != FORMAT:
        raise CeqlInputError("The MATCH_RECOGNIZE snapshot is damaged (not a snapshot's "
                             "layout)")
    if saved["query"] != query_digest(text):
        raise CeqlInputError("This snapshot was taken by the evaluator of another "
                             "MATCH_RECOGNIZE query: restore it into the query that took it "
                             "(its canonical text must be the same)")
    return saved["state"]
