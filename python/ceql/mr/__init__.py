"""MATCH_RECOGNIZE on the pure-Python engine (docs/match_recognize.md): a query compiled from
the front end's syntax tree (:mod:`ceql.frontends.mr`) and run partition by partition on the
engine :mod:`ceql.mr.engines` chooses (fixed-length, or the leftmost preferred-first
matcher of :mod:`ceql.runtime.leftmost`); or row by row as a stream
brings them, with snapshots (:meth:`MatchRecognizeQuery.evaluator`).

    >>> from ceql.mr import match_recognize
    >>> q = match_recognize("MEASURES COUNT(*) AS n PATTERN (A B+) "
    ...                     "DEFINE B AS x > PREV(x)")
    >>> q.run([{"x": 1}, {"x": 2}, {"x": 3}, {"x": 0}])
    [{'n': 3}]
"""

from .arrow_rows import arrow_rows
from .errors import MrValueError, UnknownColumnError
from .evaluator import MatchRecognizeEvaluator, MrLive
from .query import MatchRecognizeQuery, match_recognize

__all__ = ["MatchRecognizeEvaluator", "MatchRecognizeQuery", "MrLive", "MrValueError",
           "UnknownColumnError", "arrow_rows", "match_recognize"]
