"""What ``ceql run`` tells standard error: a progress bar, the summary line, other lines."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["Progress", "messages_to", "say", "summary_line"]

_streams: list[TextIO] = []  # where ceql's own lines go, innermost last


@contextmanager
def messages_to(stream: TextIO) -> Iterator[None]:
    """Send :func:`say`'s lines to ``stream`` meanwhile (e.g. while Spark owns descriptor 2)."""
    _streams.append(stream)
    try:
        yield
    finally:
        _streams.pop()


def say(line: str, stream: TextIO | None = None) -> None:
    """Print ``line`` on ``stream`` (by default standard error, or where :func:`messages_to`
    says) at once."""
    if stream is None:
        stream = _streams[-1] if _streams else sys.stderr
    print(line, file=stream, flush=True)


class Progress:
    """A one-line progress bar on standard error, redrawn at most ten times a second."""

    def __init__(self, enabled: bool, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self._stream = stream if stream is not None else sys.stderr
        self._start = time.perf_counter()
        self._last = 0.0
        self._drawn = False

    def update(self, events: int, matches: int, fraction: float | None) -> None:
        """Redraw, unless the last redraw was less than 0.1 s ago."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.1:
            return
        self._last = now
        width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
        counts = (f"{events:,} events, {_plural(matches, 'match', 'matches')}, "
                  f"{now - self._start:.1f} s")
        if fraction is not None:
            bar_width = max(10, min(40, width - len(counts) - 14))
            filled = round(bar_width * fraction)
            line = (f"ceql [{'#' * filled}{'-' * (bar_width - filled)}] "
                    f"{fraction * 100:3.0f}%  {counts}")
        else:
            line = f"ceql  {counts}"
        self._stream.write("\r" + line[:width] + "\x1b[K")
        self._stream.flush()
        self._drawn = True

    def note(self, text: str) -> None:
        """Show what is going on when there is nothing to count yet."""
        if self.enabled:
            elapsed = time.perf_counter() - self._start
            self._stream.write(f"\rceql  {text}... {elapsed:.1f} s\x1b[K")
            self._stream.flush()
            self._drawn = True

    def clear(self) -> None:
        """Erase the bar (before the summary line, or when stopping)."""
        if self._drawn:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._drawn = False


def _plural(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def summary_line(events: int, matches: int, seconds: float) -> str:
    """``ceql: 1,000,000 events read, 1,074 matches in 0.41 s (2.4 M events/s)``."""
    rate = events / seconds if seconds > 0 else 0.0
    if rate >= 1e6:
        speed = f"{rate / 1e6:.1f} M events/s"
    elif rate >= 1e3:
        speed = f"{rate / 1e3:.1f} k events/s"
    else:
        speed = f"{rate:.0f} events/s"
    return (f"ceql: {_plural(events, 'event', 'events')} read, "
            f"{_plural(matches, 'match', 'matches')} in {seconds:.2f} s ({speed})")
