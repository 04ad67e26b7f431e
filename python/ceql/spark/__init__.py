"""ceql inside Spark SQL: the MATCH_CEQL table function and its session helpers.

    >>> import ceql.spark
    >>> spark = ceql.spark.local_session()                       # doctest: +SKIP
    >>> spark.sql("SELECT * FROM MATCH_CEQL(TABLE(stock) PARTITION BY name ORDER BY ts, "
    ...           "query => 'SELECT * FROM stock WHERE SELL AS a ; BUY AS b')")  # doctest: +SKIP

SQL spellings (all the same function):

- ``MATCH_CEQL(TABLE(t) PARTITION BY p ORDER BY ts, query => '<CEQL>')``
- ``MATCH_CEQL(TABLE(t), query => '<CEQL with PARTITION BY [p]>')``
- ``MATCH_CEQL('<CEQL>')``: the tables come from the query's FROM
- ``MATCH_CEQL( <CEQL> )``: the query written inline (needs the extension's parser)

Options (named arguments): ``time``, ``time_unit``, ``time_format``, ``type``, ``rows``
(``matches`` or ``events``), ``tie_break``, ``bounds``. :func:`match` and :func:`run` are the
DataFrame API; :func:`match_spaseq` runs a SPAseq query (``MATCH_SPASEQ``, docs/spark.md);
:func:`match_recognize` runs SQL's MATCH_RECOGNIZE (``MATCH_RECOGNIZE_TABLE``);
:func:`check` warns of event types the input never carries; :func:`unwrap`
finds ceql's error in the exception Spark raises. The ``spark.ceql.*`` settings are
:data:`CONFS` (:mod:`ceql.spark.conf`).
"""

from __future__ import annotations

from ceql.constants import EXTENSION_CLASS
from ceql.spark.check import check
from ceql.spark.conf import CONFS, ConfEntry
from ceql.spark.dataframe import match, run
from ceql.spark.errors import MatchCeqlError, TieOrderWarning, unwrap
from ceql.spark.mr import match_recognize
from ceql.spark.session.connect import late_rows
from ceql.spark.session.local import configure, enable, jar_path, local_session, server_conf
from ceql.spark.spaseq import match_spaseq
from ceql.spark.stream.operator import LATE_METRIC, METRICS, match_stream
from ceql.spark.udtf.ids import match_ids
from ceql.spark.udtf.ids import ordinal_match_id as match_id

__all__ = [
    "CONFS",
    "EXTENSION_CLASS",
    "LATE_METRIC",
    "METRICS",
    "ConfEntry",
    "MatchCeqlError",
    "TieOrderWarning",
    "check",
    "configure",
    "enable",
    "jar_path",
    "late_rows",
    "local_session",
    "match",
    "match_id",
    "match_ids",
    "match_recognize",
    "match_spaseq",
    "match_stream",
    "run",
    "server_conf",
    "unwrap",
]
