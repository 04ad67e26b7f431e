package org.apache.spark.sql.ceql

import java.nio.charset.StandardCharsets
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.sys.process.{Process, ProcessLogger}

import org.apache.spark.SparkEnv
import org.apache.spark.api.python.{PythonFunction, PythonUtils, SimplePythonFunction}
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.internal.SQLConf

import CeqlConstants.TableFunction

/**
 * The Python side of a table function as Spark's Python runner wants it: a PythonFunction whose
 * command is a pickled reference to the importable class the function's entry names (for
 * MATCH_CEQL `ceql.spark.udtf.match_ceql.MatchCeql`), so no Python code has to register anything.
 */
object CeqlPython {
  private val functions =
    new ConcurrentHashMap[(String, TableFunction, Map[String, String]), PythonFunction]()

  /** `pickle.dumps` of the function's class, by reference: protocol 2, GLOBAL opcode, STOP. */
  def command(spec: TableFunction): Array[Byte] =
    ("\u0080\u0002c" + spec.pythonModule + "\n" + spec.pythonClass + "\n.")
      .getBytes(StandardCharsets.ISO_8859_1)

  /** The Python executable to start: `spark.ceql.python`, else `spark.pyspark.python`, else
   * `PYSPARK_PYTHON`, else `python3`. */
  def pythonExec(): String = {
    val fromSql = SQLConf.get.getConf(CeqlConf.Python).filter(_.nonEmpty)
    def fromSpark = Option(SparkEnv.get).flatMap(_.conf.getOption("spark.pyspark.python"))
    fromSql.orElse(fromSpark).orElse(sys.env.get("PYSPARK_PYTHON")).getOrElse("python3")
  }

  /** The function's Python side for the current settings (checked once per executable);
   * `env`: more environment for its Python workers (what a call may read). */
  def function(spec: TableFunction, env: Map[String, String] = Map.empty): PythonFunction = {
    val exec = pythonExec()
    val known = functions.get((exec, spec, env))
    if (known != null) return known
    val created = create(exec, spec, env)
    functions.putIfAbsent((exec, spec, env), created)
    created
  }

  private def create(exec: String, spec: TableFunction,
      env: Map[String, String]): PythonFunction = {
    val pythonPath = PythonUtils.mergePythonPaths(
      PythonUtils.sparkPythonPath, sys.env.getOrElse("PYTHONPATH", ""))
    val version = probe(exec, pythonPath, spec)
    SimplePythonFunction(
      command = command(spec).toSeq,
      envVars = (env + ("PYTHONPATH" -> pythonPath)).asJava,
      pythonIncludes = List.empty[String].asJava,
      pythonExec = exec,
      pythonVer = version,
      broadcastVars = List.empty.asJava,
      accumulator = null)
  }

  /** Starts `exec` once: it must import the handler; returns its `major.minor` version. */
  private def probe(exec: String, pythonPath: String, spec: TableFunction): String = {
    val script =
      s"import sys, ${spec.pythonModule}; print('%d.%d' % sys.version_info[:2])"
    val out = new StringBuilder
    val err = new StringBuilder
    val code =
      try {
        Process(Seq(exec, "-c", script), None, "PYTHONPATH" -> pythonPath)
          .!(ProcessLogger(line => out.append(line).append('\n'),
            line => err.append(line).append('\n')))
      } catch {
        case e: java.io.IOException =>
          err.append(e.getMessage)
          -1
      }
    if (code != 0) {
      val why = err.toString.trim.linesIterator.toSeq.lastOption.getOrElse(s"exit code $code")
      throw new AnalysisException(
        errorClass = "TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON",
        messageParameters = Map("msg" ->
          (s"${spec.name} cannot use the Python '$exec' ($why). Point PYSPARK_PYTHON (or " +
            s"${CeqlConstants.ConfPython}) to a Python where `import ceql` works, e.g. the " +
            "one ceql is installed in.")))
    }
    out.toString.trim
  }
}
