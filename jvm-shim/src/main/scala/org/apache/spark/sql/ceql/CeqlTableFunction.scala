package org.apache.spark.sql.ceql

import scala.jdk.CollectionConverters._

import org.apache.spark.api.python.{PythonEvalType, PythonFunction}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.{AnalysisException, DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.analysis.{UnresolvedAttribute, UnresolvedRelation, UnresolvedStar}
import org.apache.spark.sql.catalyst.expressions.{Alias, Ascending, AttributeReference, Descending, Expression, ExpressionInfo, FunctionTableSubqueryArgumentExpression, Literal, NamedArgumentExpression, NamedExpression, PythonUDTF, PythonUDTFSelectedExpression, SortOrder}
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Generate, LogicalPlan, OneRowRelation, Project, Repartition, RepartitionByExpression, Sort, SubqueryAlias, Union}
import org.apache.spark.sql.types.{MetadataBuilder, StructType}
import org.apache.spark.sql.execution.python.{UserDefinedPythonTableFunction, UserDefinedPythonTableFunctionAnalyzeRunner}

import CeqlConstants._

/**
 * The shim's table functions, one per entry of `CeqlConstants.TableFunctions` (generated from
 * `TABLE_FUNCTIONS` in python/ceql/constants.py): adding one is adding an entry there.
 */
object CeqlTableFunctions {
  val all: Seq[CeqlTableFunction] = TableFunctions.map(new CeqlTableFunction(_))

  /** The function called `name` (any case). */
  def apply(name: String): CeqlTableFunction =
    all.find(_.name.equalsIgnoreCase(name)).getOrElse(throw new IllegalArgumentException(
      s"no ceql table function $name; there are ${all.map(_.name).mkString(", ")}"))

  /** The DataFrame API's entry (`ceql.spark.match`): see [[CeqlTableFunction.dataFrame]]. */
  def dataFrame(name: String, input: DataFrame, partitionBy: java.util.List[String],
      options: java.util.Map[String, String]): DataFrame =
    apply(name).dataFrame(input, partitionBy, options)
}

/**
 * One table function of the shim (MATCH_CEQL, MATCH_SPASEQ): a Python UDTF (Arrow eval type, with `analyze`)
 * whose class `spec` names, built here.
 *
 * The builder describes the call to the Python `analyze` step in one extra named argument
 * (`_table_call`, JSON): the table argument's PARTITION BY / ORDER BY (removed from the table
 * argument so that `analyze` decides the partitioning and ordering in one place), and the
 * table's name. Without a table argument a CEQL function (`inlineCeql`) reads the tables the
 * query's FROM names, merging several into one stream tagged with each row's table. It then
 * runs `analyze` at once and arranges the input (shuffle by the requested partitioning, sort
 * by partition and time).
 */
final class CeqlTableFunction(val spec: TableFunction) extends Logging {
  def name: String = spec.name

  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) =
    (FunctionIdentifier(name),
      new ExpressionInfo(getClass.getCanonicalName, null, name, spec.usage,
        "", "", "", "", "", "", "python_udtf"),
      build)

  /** Registers the function in a running session (for sessions without the extension), as a
   * temporary function like `spark.udtf.register` does. */
  def register(session: SparkSession): Unit =
    session.asInstanceOf[org.apache.spark.sql.classic.SparkSession]
      .sessionState.tableFunctionRegistry.createOrReplaceTempFunction(name, build, "python_udtf")

  /** The plan of one call: Spark's Python UDTF, analysed in Python right away. */
  def build(args: Seq[Expression]): LogicalPlan =
    build(org.apache.spark.sql.classic.SparkSession.active, args)

  /** The DataFrame API's entry (`ceql.spark.match`): the function over `input`, as if called
   * as `NAME(TABLE(input) PARTITION BY partitionBy, name => value, ...)`. */
  def dataFrame(input: DataFrame, partitionBy: java.util.List[String],
      options: java.util.Map[String, String]): DataFrame = {
    val ds = input.asInstanceOf[org.apache.spark.sql.classic.Dataset[Row]]
    val table = FunctionTableSubqueryArgumentExpression(ds.logicalPlan,
      partitionByExpressions = partitionBy.asScala.toSeq.map(c => UnresolvedAttribute(Seq(c))))
    val named = options.asScala.toSeq.sortBy(_._1).map { case (k, v) =>
      NamedArgumentExpression(k, Literal(v))
    }
    org.apache.spark.sql.classic.Dataset.ofRows(ds.sparkSession,
      build(ds.sparkSession, table +: named, trusted = true))
  }

  /** `trusted`: the options come from a Python caller (the DataFrame API), not query text. */
  private def build(session: org.apache.spark.sql.classic.SparkSession,
      args: Seq[Expression], trusted: Boolean = false): LogicalPlan = {
    args.collectFirst { case NamedArgumentExpression(k, _) if k.equalsIgnoreCase(CallArgument) =>
      throw refused(s"$name: $CallArgument is ceql's own argument, written by the shim; " +
        "leave it out.")
    }
    val (withTable, call) = describeCall(session, args)
    val exprs = withTable :+ NamedArgumentExpression(CallArgument, Literal(call))
    val func = CeqlPython.function(spec, access(session, trusted))
    exprs.zipWithIndex.filter { case (e, _) => tableOf(e).isDefined } match {
      case Seq((arg, i)) => arranged(session, exprs, i, tableOf(arg).get, func)
      case _ => // not one table argument: Spark's own path, where analyze says what is wrong
        UserDefinedPythonTableFunction(name, func, None, PythonEvalType.SQL_ARROW_UDTF,
          udfDeterministic = true).builder(exprs, CatalystSqlParser)
    }
  }

  /**
   * Runs `analyze` now and shuffles and sorts the input itself, as Spark would for the
   * requested partitioning, but without telling the Python worker about partitions: the worker
   * then hands whole Arrow batches to MatchCeql, which splits them by key with Arrow compute
   * instead of Spark's row-by-row boundary check.
   */
  private def arranged(session: org.apache.spark.sql.classic.SparkSession,
      exprs: Seq[Expression], i: Int, table: FunctionTableSubqueryArgumentExpression,
      func: PythonFunction): LogicalPlan = {
    def analyzed(plan: LogicalPlan): LogicalPlan =
      if (plan.resolved) plan else session.sessionState.executePlan(plan).analyzed
    val input = table.withNewPlan(analyzed(table.plan))
    // only this path applies a prefilter, so only it asks analyze for one
    val withInput = exprs.updated(i, rewrap(exprs(i), input)) :+
      NamedArgumentExpression(PrefilterArgument, Literal(PrefilterOn))
    val result = new UserDefinedPythonTableFunctionAnalyzeRunner(
      name, func, withInput, withInput.map(tableOf(_).isDefined), CatalystSqlParser).runInPython()
    val parts = result.partitionByExpressions
    val source = prefiltered(session, result.schema, input.plan)
    val shuffled =
      if (result.withSinglePartition || parts.isEmpty) Repartition(1, shuffle = true, source)
      else RepartitionByExpression(parts, source, None)
    val sorted = selected(result.selectedInputExpressions,
      Sort(parts.map(SortOrder(_, Ascending)) ++ result.orderByExpressions, global = false,
        shuffled))
    val udtf = PythonUDTF(
      name = name,
      func = func,
      elementSchema = withoutPrefilter(result.schema),
      pickledAnalyzeResult = Some(result.pickledAnalyzeResult),
      children = exprs.updated(i, rewrap(exprs(i), input.withNewPlan(analyzed(sorted)))),
      evalType = PythonEvalType.SQL_ARROW_UDTF,
      udfDeterministic = true,
      tableArguments = Some(exprs.map(tableOf(_).isDefined)))
    Generate(udtf, unrequiredChildIndex = Nil, outer = false, qualifier = None,
      generatorOutput = Nil, child = OneRowRelation())
  }

  /**
   * The input with the rows that no run can read dropped before the shuffle. `analyze` writes
   * that condition (Spark SQL, or nothing when every row may matter) into the metadata of the
   * first output column; `spark.ceql.prefilter.enabled=false` turns it off. A condition that
   * does not parse is a bug of ours: it is logged and the input is kept whole.
   */
  private def prefiltered(session: org.apache.spark.sql.classic.SparkSession,
      schema: StructType, plan: LogicalPlan): LogicalPlan = {
    val enabled = session.sessionState.conf.getConf(CeqlConf.PrefilterEnabled)
    schema.fields.headOption.filter(f => enabled && f.metadata.contains(PrefilterKey)) match {
      case Some(f) =>
        val sql = f.metadata.getString(PrefilterKey)
        try Filter(session.sessionState.sqlParser.parseExpression(sql), plan)
        catch {
          case e: Exception =>
            logWarning(s"$name: ignoring the prefilter '$sql' (${e.getMessage})")
            plan
        }
      case None => plan
    }
  }

  /** The columns `analyze` asks Spark to compute for the task (`AnalyzeResult.select`:
   * MATCH_RECOGNIZE_TABLE's row-local expressions), over the arranged input; as Spark's own
   * path does, after the shuffle and sort. */
  private def selected(exprs: Seq[PythonUDTFSelectedExpression], plan: LogicalPlan): LogicalPlan =
    if (exprs.isEmpty) plan
    else Project(exprs.map {
      case PythonUDTFSelectedExpression(e, Some(alias)) => Alias(e, alias)()
      case PythonUDTFSelectedExpression(e: NamedExpression, None) => e
      case PythonUDTFSelectedExpression(e, None) => Alias(e, e.sql)()
    }, plan)

  private def withoutPrefilter(schema: StructType): StructType =
    StructType(schema.fields.map { f =>
      if (!f.metadata.contains(PrefilterKey)) f
      else f.copy(metadata = new MetadataBuilder().withMetadata(f.metadata)
        .remove(PrefilterKey).build())
    })

  private def rewrap(arg: Expression, table: FunctionTableSubqueryArgumentExpression): Expression =
    arg match {
      case NamedArgumentExpression(k, _) => NamedArgumentExpression(k, table)
      case _ => table
    }

  private def tableOf(e: Expression): Option[FunctionTableSubqueryArgumentExpression] =
    e match {
      case t: FunctionTableSubqueryArgumentExpression => Some(t)
      case NamedArgumentExpression(_, t: FunctionTableSubqueryArgumentExpression) => Some(t)
      case _ => None
    }

  /**
   * What the query's options may read, for the environment of the Python workers that run
   * this call (`analyze` checks a MATCH_SPASEQ dataset against it): set here, where the
   * session's settings are, so no caller of the Python function can claim it — the call
   * description is written by whoever calls that function. MATCH_CEQL reads no file and gets
   * nothing (its workers stay one pool).
   */
  private def access(session: org.apache.spark.sql.classic.SparkSession,
      trusted: Boolean): Map[String, String] =
    if (name != MatchSpaseq) Map.empty
    else {
      val paths = session.sessionState.conf.getConf(CeqlConf.SpaseqDatasetPaths).getOrElse("")
      Map(EnvDatasetAccess -> ("{" + Json.str(AccessDatasetPaths) + ":" + Json.str(paths) +
        "," + Json.str(AccessDatasetTrusted) + ":" + trusted.toString + "}"))
    }

  private def describeCall(session: org.apache.spark.sql.classic.SparkSession,
      args: Seq[Expression]): (Seq[Expression], String) = {
    val tables = args.zipWithIndex.flatMap { case (e, i) => tableOf(e).map(t => (t, i)) }
    tables match {
      case Seq((t, i)) =>
        val stripped = t.copy(partitionByExpressions = Nil, withSinglePartition = false,
          orderByExpressions = Nil)
        (args.updated(i, rewrap(args(i), stripped)), tableCall(t))
      case Seq() if spec.inlineCeql => fromClause(session, args) // CEQL's FROM names the tables
      case _ => (args, "{}") // several tables, or none: analyze says what is wrong
    }
  }

  private def column(e: Expression): Option[String] = e match {
    case a: UnresolvedAttribute if a.nameParts.length == 1 => Some(a.nameParts.head)
    case a: AttributeReference => Some(a.name)
    case _ => None
  }

  private def tableCall(t: FunctionTableSubqueryArgumentExpression): String = {
    val parts = t.partitionByExpressions
    val order = t.orderByExpressions
    val tableName = t.plan match {
      case r: UnresolvedRelation => r.multipartIdentifier.lastOption
      case SubqueryAlias(alias, _) => Some(alias.name) // a table or view, already resolved
      case _ => None
    }
    Json.obj(
      CallPartitionBy -> Json.arr(parts.flatMap(column)),
      CallBadPartitionBy -> Json.arr(parts.filter(column(_).isEmpty).map(_.sql)),
      CallOrderBy -> Json.arr(order.map(_.child.sql)),
      CallOrderByColumn -> order.headOption.flatMap(o => column(o.child)).map(Json.str)
        .getOrElse("null"),
      CallDescending -> order.exists(_.direction == Descending).toString,
      CallSinglePartition -> t.withSinglePartition.toString,
      CallTableName -> tableName.map(Json.str).getOrElse("null"))
  }

  /** No table argument: read the tables the query's FROM clause names. */
  private def fromClause(session: org.apache.spark.sql.classic.SparkSession,
      args: Seq[Expression]): (Seq[Expression], String) = {
    val text = args.collectFirst {
      case NamedArgumentExpression(OptionQuery, Literal(v, _)) if v != null => v.toString
      case Literal(v, _) if v != null => v.toString
    }
    val names = text.map(CeqlSyntax.fromNames).getOrElse(Nil)
    if (!session.sessionState.conf.getConf(CeqlConf.FromFiles)) names.foreach(noFile(session, _))
    val (plan, call) = names match {
      case Seq() =>
        (OneRowRelation(), Json.obj(CallNoInput -> "true"))
      case Seq(one) =>
        (relation(one), Json.obj(CallTableName -> Json.str(one)))
      case many =>
        val tagged = many.zipWithIndex.map { case (n, i) =>
          Project(Seq(UnresolvedStar(None), Alias(Literal(n), InternalStreamColumn)(),
            Alias(Literal(i), InternalFromOrderColumn)()), relation(n))
        }
        (Union(tagged, byName = true, allowMissingCol = true),
          Json.obj(CallStreams -> Json.arr(many)))
    }
    (FunctionTableSubqueryArgumentExpression(plan) +: args, call)
  }

  /**
   * Refuses a FROM name that Spark would read as a file (`format`.`path`, with
   * spark.sql.runSQLOnFiles): a name of two parts that is no table or view and whose first
   * part is a data source. Query text then reads only tables and views.
   */
  private def noFile(session: org.apache.spark.sql.classic.SparkSession, from: String): Unit = {
    val parts = from.split('.')
    if (parts.length == 2 && !session.catalog.tableExists(quoteParts(from))) {
      val isSource =
        try {
          org.apache.spark.sql.execution.datasources.DataSource
            .lookupDataSource(parts(0), session.sessionState.conf)
          true
        } catch { case scala.util.control.NonFatal(_) => false } // no such data source
      if (isSource) throw refused(
        s"$name: the FROM name ${Json.str(from)} is no table or view but a ${parts(0)} file " +
        s"path, and ceql reads only tables and views from query text; register the data as a " +
        s"view (CREATE TEMPORARY VIEW ... USING ${parts(0)}) or set " +
        s"$ConfFromFiles=true to let FROM name files.")
    }
  }

  private def refused(message: String): AnalysisException =
    new AnalysisException(errorClass = "TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON",
      messageParameters = Map("msg" -> message))

  private def relation(name: String): LogicalPlan =
    UnresolvedRelation(CatalystSqlParser.parseMultipartIdentifier(quoteParts(name)))

  /** A CEQL FROM name as a table identifier: dots separate parts, as in SQL. */
  private def quoteParts(name: String): String =
    name.split('.').map(p => "`" + p.replace("`", "``") + "`").mkString(".")

  /** Just enough JSON writing for the call description. */
  private object Json {
    def str(s: String): String = {
      val sb = new java.lang.StringBuilder("\"")
      s.foreach {
        case '"' => sb.append("\\\"")
        case '\\' => sb.append("\\\\")
        case c if c < ' ' => sb.append(f"\\u${c.toInt}%04x")
        case c => sb.append(c)
      }
      sb.append('"').toString
    }
    def arr(items: Seq[String]): String = items.map(str).mkString("[", ",", "]")
    def obj(fields: (String, String)*): String =
      fields.map { case (k, v) => str(k) + ":" + v }.mkString("{", ",", "}")
  }
}
