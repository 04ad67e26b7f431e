package org.ceql.spark

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.ceql.{CeqlConf, CeqlSqlParser, CeqlTableFunctions}

/**
 * Wires ceql into Spark SQL; list it in `spark.sql.extensions`.
 *
 * It only injects: the table functions of [[CeqlTableFunctions]] (MATCH_CEQL, a Python UDTF
 * built on the JVM side) and the parser that reads `MATCH_CEQL( <CEQL> )`. The work is done by
 * the classes it names.
 */
class CeqlSparkSessionExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    CeqlConf.register()
    CeqlTableFunctions.all.foreach(f => extensions.injectTableFunction(f.description))
    extensions.injectParser(CeqlSqlParser.inject)
  }
}

object CeqlSparkSessionExtensions {
  /** Registers the table functions in a session that was started without the extension. */
  def register(session: SparkSession): Unit = {
    CeqlConf.register()
    CeqlTableFunctions.all.foreach(_.register(session))
  }
}
