package org.apache.spark.sql.ceql

import scala.collection.mutable.ArrayBuffer

import CeqlSyntax.{SqlTokens, Tok}

/**
 * Lexical reading of SQL's inline row pattern recognition, `FROM src MATCH_RECOGNIZE ( <body> )
 * [[AS] alias]`, rewritten into the table function call
 * `MATCH_RECOGNIZE_TABLE(TABLE(src), body => '<body>') [[AS] alias]`.
 *
 * The clause is found among the tokens Spark's own lexer reads in the SQL text (so nothing
 * inside a string, quoted name or comment is ever a clause, nor a `MATCH_RECOGNIZE` after a `.`),
 * where `MATCH_RECOGNIZE` (any case) and `(` follow a relation of a FROM clause: a name
 * (`t`, `db.t`, `` `my t` ``), a parenthesised subquery, or a table function call, with an
 * optional alias (`[AS] a`, `[AS] a(c1, c2)`), that starts after FROM, a comma or JOIN of a FROM
 * clause, or after the `(` of a parenthesised relation there. Such a source is moved into the
 * table argument: a name or a parenthesised query as it is (`TABLE(db.t)`, `TABLE((SELECT …))`),
 * anything else as `TABLE(SELECT * FROM <src>)` (the alias of the source names nothing the
 * body can read, and the clause's own alias after its `)` stays where it is).
 *
 * The body ends at its `)` at depth 0, skipping MATCH_RECOGNIZE's strings (`'…'`, `''` a quote),
 * back-quoted names and comments (`--`, `/* … */`); it becomes a SQL string literal as it is
 * written (but the CLI's escaped `\;`, which is turned back into `;`). It is never interpreted:
 * the table function parses it when Spark analyses the statement. Inline `MATCH_CEQL( <CEQL> )`
 * calls are skipped whole ([[CeqlSyntax]] rewrites them after this).
 */
object MatchRecognizeSyntax {

  /** One clause: its source in [sourceStart, sourceEnd), the word at `start`, `(` at `open`,
   * `)` at `close` (-1 if unclosed); `direct`: the source is a name or a parenthesised query,
   * which `TABLE( )` takes as it is. */
  final case class Clause(sourceStart: Int, sourceEnd: Int, start: Int, open: Int, close: Int,
      direct: Boolean) {
    def closed: Boolean = close >= 0
    def bodyStart: Int = open + 1
    def bodyEnd(textLength: Int): Int = if (closed) close else textLength
    def end(textLength: Int): Int = if (closed) close + 1 else textLength
  }

  /** A clause without its closing parenthesis. */
  final class UnclosedClause(val clause: Clause) extends IllegalArgumentException(
    s"${CeqlConstants.MrClause} ( at position ${clause.start} has no closing parenthesis; end " +
      "its body with ')'")

  /** False if `sql` certainly holds no clause (a quick test before [[clauses]]). */
  def mayHaveClauses(sql: String): Boolean =
    sql.toUpperCase(java.util.Locale.ROOT).contains(CeqlConstants.MrClause)

  /** Every clause of `sql`, in the order of their words (after an unclosed one, none);
   * `loose`: inline MATCH_CEQL calls are read as [[CeqlSyntax.calls]] reads them loosely. */
  def clauses(sql: String, loose: Boolean): Vector[Clause] = {
    val out = Vector.newBuilder[Clause]
    val frames = ArrayBuffer(new Frame(-1, relation = false))
    var toks = new SqlTokens(sql, 0)
    var k = 0
    def restartAfter(close: Int): Unit = {
      toks = new SqlTokens(sql, close + 1)
      k = 0
    }
    while (toks(k).code) {
      val t = toks(k)
      val f = frames.last
      if (f.first.isEmpty) f.first = t.kind
      k += 1
      t.kind match {
        case "SEMICOLON" =>
          frames.clear()
          frames += new Frame(-1, relation = false)
        case "LEFT_PAREN" =>
          frames += new Frame(t.start, relation = f.collecting && f.items.isEmpty)
        case "RIGHT_PAREN" if frames.length > 1 =>
          val inner = frames.remove(frames.length - 1)
          frames.last.add(Item("GROUP", inner.open, t.end, inner.first))
        case "SELECT" =>
          f.fromSeen = false
          f.stopCollecting()
        case "FROM" =>
          f.fromSeen = true
          f.startCollecting()
        case "COMMA" | "JOIN" if f.fromSeen => f.startCollecting()
        case "ON" | "USING" => f.stopCollecting()
        case kind if EndsFrom(kind) =>
          f.fromSeen = false
          f.stopCollecting()
        case "IDENTIFIER" if t.text.equalsIgnoreCase(CeqlConstants.MrClause) &&
            f.collecting && toks(k).kind == "LEFT_PAREN" && source(f.items).isDefined =>
          val open = toks(k).start
          val close = bodyClose(sql, open + 1)
          val clause = Clause(f.items.head.start, f.items.last.end, t.start, open, close,
            source(f.items).get)
          out += clause
          if (!clause.closed) return out.result()
          f.items.clear()
          f.add(Item("CLAUSE", clause.sourceStart, close + 1, ""))
          restartAfter(close)
        case "IDENTIFIER" if CeqlSyntax.functions.exists(_.equalsIgnoreCase(t.text)) &&
            !(k > 1 && toks(k - 2).kind == "DOT") && toks(k).kind == "LEFT_PAREN" =>
          val function = CeqlSyntax.functions.find(_.equalsIgnoreCase(t.text)).get
          CeqlSyntax.inlineCall(function, sql, t.start, toks(k).start, toks(k + 1), toks(k + 2),
            loose) match {
            case Some(c) if !c.closed => return out.result()    // CEQL text to the end
            case Some(c) =>
              f.add(item(t))
              f.add(Item("GROUP", c.open, c.close + 1, "CEQL"))
              restartAfter(c.close)
            case None => f.add(item(t))
          }
        case _ => f.add(item(t))
      }
    }
    out.result()
  }

  /** `sql` with every clause rewritten; unchanged when there is none. */
  def rewrite(sql: String): String = rewrite(sql, loose = false, CeqlSyntax.DefaultLiterals)

  /** `sql` with every clause rewritten (`how`: how Spark reads the string literal the body
   * becomes); unchanged when there is none. */
  def rewrite(sql: String, loose: Boolean, how: CeqlSyntax.Literals): String = {
    val found = clauses(sql, loose)
    if (found.isEmpty) return sql
    found.find(!_.closed).foreach(c => throw new UnclosedClause(c))
    emit(sql, 0, sql.length, found, how)
  }

  /** The body of a clause, with the CLI's escaped `\;` turned back into `;`. */
  def body(sql: String, clause: Clause): String =
    sql.substring(clause.bodyStart, clause.bodyEnd(sql.length)).replace("\\;", ";")

  /** `sql` in [from, to) with the clauses lying there rewritten (one whose source holds
   * another is rewritten with that one rewritten in it). */
  private def emit(sql: String, from: Int, to: Int, all: Vector[Clause],
      how: CeqlSyntax.Literals): String = {
    val sb = new java.lang.StringBuilder
    var last = from
    for (c <- all.sortBy(_.sourceStart)) if (c.sourceStart >= last && c.end(sql.length) <= to) {
      sb.append(sql, last, c.sourceStart)
      val source = emit(sql, c.sourceStart, c.sourceEnd, all, how)
      sb.append(CeqlConstants.MatchRecognizeTable).append("(TABLE(")
      if (!c.direct) sb.append("SELECT * FROM ")
      sb.append(source).append("), ").append(CeqlConstants.OptionBody).append(" => ")
        .append(CeqlSyntax.sqlString(body(sql, c), how, s"${CeqlConstants.MrClause} body"))
        .append(")")
      last = c.close + 1
    }
    sb.append(sql, last, to).toString
  }

  // ------------------------------------------------------------------ the source

  /** What a relation is read as: a token's kind (`WORD` for a name, `DOT`, `AS`, ...), a
   * parenthesised `GROUP` (`first`: the kind of its first token), or a rewritten `CLAUSE`. */
  private final case class Item(kind: String, start: Int, end: Int, first: String)

  /** The state of one parenthesis level: whether a FROM clause is being read there, and the
   * items of the relation that started last (`collecting`: one has started). */
  private final class Frame(val open: Int, relation: Boolean) {
    var first: String = ""
    var fromSeen: Boolean = relation
    var collecting: Boolean = relation
    val items: ArrayBuffer[Item] = ArrayBuffer.empty

    def startCollecting(): Unit = { collecting = true; items.clear() }
    def stopCollecting(): Unit = { collecting = false; items.clear() }
    def add(item: Item): Unit = if (collecting) items += item
  }

  /** Keywords after which a FROM clause is over. */
  private val EndsFrom = Set("WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "WINDOW",
    "QUALIFY", "UNION", "EXCEPT", "INTERSECT", "SETMINUS", "CLUSTER", "DISTRIBUTE", "SORT")

  /** Keywords that are never a relation's name or alias (written in backquotes they are). */
  private val NotNames = EndsFrom ++ Set("SELECT", "FROM", "JOIN", "ON", "USING", "AS",
    "LATERAL", "NATURAL", "CROSS", "INNER", "LEFT", "RIGHT", "FULL", "OUTER", "SEMI", "ANTI",
    "PIVOT", "UNPIVOT", "TABLESAMPLE")

  /** The first tokens of a query (a group starting with one is a subquery). */
  private val QueryStarts = Set("SELECT", "WITH", "VALUES", "FROM", "TABLE")

  private def item(t: Tok): Item = {
    val word = t.kind == "IDENTIFIER" || t.kind == "BACKQUOTED_IDENTIFIER" ||
      (t.text.nonEmpty && t.text.forall(CeqlSyntax.isSqlWordChar) && !NotNames(t.kind))
    Item(if (word) "WORD" else t.kind, t.start, t.end, "")
  }

  /** Whether `items` are a source: `primary [[AS] alias [(names)]]`, the primary a name
   * (`a.b.c`), a call (`name( … )`) or a parenthesised group. Some(direct) when they are. */
  private def source(items: ArrayBuffer[Item]): Option[Boolean] = {
    def kind(j: Int): String = if (j < items.length) items(j).kind else "END"
    var i = 1
    var direct = kind(0) match {
      case "GROUP" => QueryStarts(items(0).first)
      case "WORD" =>
        while (kind(i) == "DOT" && kind(i + 1) == "WORD") i += 2
        if (kind(i) == "GROUP") { i += 1; false } else true
      case _ => return None
    }
    val primaryEnd = i
    if (kind(i) == "AS" && kind(i + 1) == "WORD") i += 2
    else if (kind(i) == "WORD") i += 1
    if (i > primaryEnd) {
      direct = false
      if (kind(i) == "GROUP") i += 1     // the alias's column names
    }
    if (i == items.length) Some(direct) else None
  }

  // ------------------------------------------------------------------ the body

  /** The `)` ending a body that starts at `from` (MATCH_RECOGNIZE's strings, quoted names and
   * comments skipped, parentheses balanced); -1 if the text ends first. */
  private def bodyClose(sql: String, from: Int): Int = {
    var depth = 0
    var i = from
    while (i < sql.length) {
      val c = sql.charAt(i)
      if (c == '\'') i = CeqlSyntax.skipCeqlString(sql, i)
      else if (c == '`') i = CeqlSyntax.skipQuotedName(sql, i)
      else if (sql.startsWith("--", i)) i = CeqlSyntax.skipLine(sql, i)
      else if (sql.startsWith("/*", i)) i = CeqlSyntax.skipCeqlComment(sql, i)
      else if (c == '(') { depth += 1; i += 1 }
      else if (c == ')' && depth > 0) { depth -= 1; i += 1 }
      else if (c == ')') return i
      else i += 1
    }
    -1
  }
}
