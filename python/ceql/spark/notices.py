"""ceql's warnings from Spark's Python workers to the console, once per query.

A task (or ``analyze``) runs in a Python worker that Spark starts: a warning it issues is
printed by that worker, once per worker process, and the user's Python cannot catch it. So a
worker says a warning as one line on its standard error, :func:`say`, tagged with a key (the
query and what was found: one key per warning of one query), at most once per worker process.
Spark copies a worker's standard error to the JVM's; in a session ceql started
(:func:`ceql.spark.local_session`), that passes through ceql's filter in the driver
(:mod:`ceql.spark.session.quiet`), which prints each key's line once and drops the key
(:class:`Notices`). Elsewhere (the user's own logging, executors of a cluster) the line shows
as written, key included, once per worker.
"""

from __future__ import annotations

import hashlib
import re
import sys
import threading

__all__ = ["Notices", "key_of", "notice_line", "said", "say"]

#: ``ceql: <Category> [<key>]: <message>`` on one line.
_LINE = re.compile(r"ceql: (?P<category>\w+) \[(?P<key>[0-9a-f]{16})\]: (?P<message>.*?)\r?\n?")

_said: set[str] = set()


def key_of(*parts: str) -> str:
    """A notice's key: a digest of ``parts`` (e.g. the query's plan and the warning's kind)."""
    digest = hashlib.blake2b("\x00".join(parts).encode("utf-8"), digest_size=8)
    return digest.hexdigest()


def notice_line(key: str, category: str, message: str) -> str:
    """The line a worker writes for a warning (newlines in ``message`` become spaces)."""
    flat = " ".join(message.split("\n"))
    return f"ceql: {category} [{key}]: {flat}\n"


def said(key: str) -> bool:
    """Whether this process has said the notice ``key`` already."""
    return key in _said


def say(key: str, category: type[Warning], message: str) -> None:
    """Write the notice on standard error, unless this process has said ``key`` already."""
    if key in _said:
        return
    _said.add(key)
    err = sys.stderr
    if err is not None:
        err.write(notice_line(key, category.__name__, message))
        err.flush()


class Notices:
    """The driver's side: each key's line once, without its key; other lines as they are.

    :meth:`passed` keeps what it has let through (category, message), for the session's
    own checks and tests.
    """

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._passed: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def line(self, text: str) -> str | None:
        """What to print for ``text``: None for a notice said already."""
        m = _LINE.fullmatch(text)
        if m is None:
            return text
        with self._lock:
            if m["key"] in self._seen:
                return None
            self._seen.add(m["key"])
            self._passed.append((m["category"], m["message"]))
        return f"ceql: {m['category']}: {m['message']}\n"

    def passed(self) -> list[tuple[str, str]]:
        """The notices printed so far: (category, message), oldest first."""
        with self._lock:
            return list(self._passed)
