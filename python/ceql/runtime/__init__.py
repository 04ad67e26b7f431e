"""The runtime: CORE's Algorithm 1 over the tECS, enumeration, partitions, time keys, and the
:class:`Evaluator` that feeds events through them; for adapters that keep state of their own
beside an evaluation's snapshot (a stream key's, in Spark's state store), the snapshot's plain
data encoding (``encode_data``/``decode_data``: no code runs on decoding; damage is
``MalformedData``)."""

from .codec import Malformed as MalformedData
from .codec import decode as decode_data
from .codec import encode as encode_data
from .evaluator import Evaluator, no_gc
from .match import Match
from .match_arrays import MatchArrays, arrays_of, concat_arrays, cut_arrays, flat_positions
from .notices import NameSet, unseen_names_message
from .partitions import canonical_key

__all__ = ["Evaluator", "MalformedData", "Match", "MatchArrays", "NameSet", "arrays_of",
           "canonical_key", "concat_arrays", "cut_arrays", "decode_data", "encode_data",
           "flat_positions", "no_gc", "unseen_names_message"]
