"""ceql's Spark settings (``spark.ceql.*``): key, type, default and doc, defined once.

The shim registers the same entries with Spark's ``SQLConf`` (``SET -v`` lists them with their
docs): its ``CeqlConf.scala`` is generated from :data:`CONFS` by ``python -m
ceql.shim.jar``, and jvm-shim/README.md documents them in a table a test keeps in step.

    >>> from ceql.spark import conf
    >>> conf.PREFILTER_ENABLED.parse(" FALSE ")
    False
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ceql.constants import (
    CONF_FROM_FILES,
    CONF_OUTPUT_MAX_BATCH_BYTES,
    CONF_PARSER_ENABLED,
    CONF_PREFILTER_ENABLED,
    CONF_PYTHON,
    CONF_SPASEQ_DATASET_PATHS,
)

__all__ = ["CONFS", "FROM_FILES", "OUTPUT_MAX_BATCH_BYTES", "PARSER_ENABLED",
           "PREFILTER_ENABLED", "PYTHON", "SPASEQ_DATASET_PATHS", "ConfEntry"]

T = TypeVar("T", bool, str)


@dataclass(frozen=True)
class ConfEntry(Generic[T]):
    """One setting: its key, value type (``bool`` or ``str``), default (``None``: unset), doc."""

    key: str
    type: type[T]
    default: T | None
    doc: str
    since: str = "0.1.0"  # the ceql version that added it (Spark's ConfigBuilder.version)

    def parse(self, text: str) -> T:
        """``text`` as this setting's value, read the way Spark's ``booleanConf`` reads it."""
        if self.type is bool:
            folded = text.strip().lower()
            if folded not in ("true", "false"):
                raise ValueError(f"{self.key} should be boolean, but was {text!r}")
            return self.type(folded == "true")
        return self.type(text)

    def get(self, spark: Any) -> T | None:
        """The value in ``spark``'s session (the default when unset)."""
        text = spark.conf.get(self.key, None)
        return self.default if text is None else self.parse(text)

    def set(self, spark: Any, value: T) -> None:
        """Set it in ``spark``'s session."""
        spark.conf.set(self.key, str(value).lower() if self.type is bool else value)


PARSER_ENABLED = ConfEntry(
    CONF_PARSER_ENABLED, bool, True,
    "Whether the shim's parser reads MATCH_CEQL( <CEQL> ) with the CEQL query written inline "
    "and FROM t MATCH_RECOGNIZE ( ... ), and keeps their ';' together when the spark-sql CLI "
    "splits statements. When false, Spark's parser alone reads every statement (the "
    "string-literal and TABLE(t) spellings still work).")
PREFILTER_ENABLED = ConfEntry(
    CONF_PREFILTER_ENABLED, bool, True,
    "Whether MATCH_CEQL drops the rows no run can use (a filter from the query's event types "
    "and predicates) before shuffling its input. The result is the same either way.")
PYTHON = ConfEntry(
    CONF_PYTHON, str, None,
    "The Python executable MATCH_CEQL starts (it must be able to import ceql). When unset: "
    "spark.pyspark.python, else $PYSPARK_PYTHON, else python3.")

FROM_FILES = ConfEntry(
    CONF_FROM_FILES, bool, False,
    "Whether the FROM of a MATCH_CEQL query without a table argument may name a file, as "
    "`format.path` (binaryFile./etc/hosts), which Spark reads when spark.sql.runSQLOnFiles is "
    "true. When false, FROM names only tables and views: query text reads no file.")
SPASEQ_DATASET_PATHS = ConfEntry(
    CONF_SPASEQ_DATASET_PATHS, str, None,
    "Comma-separated directories whose files the dataset option of MATCH_SPASEQ in SQL may "
    "read (symbolic links and '..' resolved first). When unset, that option reads no file; "
    "ceql.spark.match_spaseq(dataset=...) on a classic session's driver is not limited, and "
    "through Spark Connect it reads no file.")

OUTPUT_MAX_BATCH_BYTES = ConfEntry(
    CONF_OUTPUT_MAX_BATCH_BYTES, str, "64m",
    "About how many bytes one Arrow batch of MATCH_CEQL's, MATCH_SPASEQ's or match_stream's "
    "output holds (a size as Spark writes them: 1048576, 512k, 64m, 1g), besides "
    "spark.sql.execution.arrow.maxRecordsPerBatch rows. A large answer flows as many batches; "
    "a task fails when one output row alone is larger.")

#: Every setting, in the order the docs list them.
CONFS: tuple[ConfEntry[Any], ...] = (PARSER_ENABLED, PREFILTER_ENABLED, PYTHON, FROM_FILES,
                                     SPASEQ_DATASET_PATHS, OUTPUT_MAX_BATCH_BYTES)
