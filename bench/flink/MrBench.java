// Flink SQL MATCH_RECOGNIZE peer for bench/mr_flink.py: one query over a filesystem CSV source
// table with an event-time attribute and a WATERMARK, in streaming mode, parallelism 1.
// Usage: java -cp <flink jars>:<classes> MrBench <headerless csv> <sql file | -> <keep>
//   the SQL file holds one SELECT over table S (columns type, id, name, volume, price, ts,
//   rowtime); "-" runs the empty job (every row read and parsed, none kept), the baseline.
// Prints one JSON line: {"matches", "digest", "job_seconds", "first": [[...], ...]}: the
// output rows' BIGINT columns, in order, kept for the first <keep> rows; the digest is the sum
// (mod 2^64) over all rows of FNV-1a over those columns (bench/mr_flink.py computes the same).
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.sink.legacy.DiscardingSink;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

public class MrBench {
    static long matches = 0;
    static long digest = 0;
    static final List<long[]> FIRST = new ArrayList<>();
    static int keep = 0;

    /** FNV-1a over the longs of one row. */
    static long fnv(long[] values) {
        long h = 0xcbf29ce484222325L;
        for (long v : values) {
            h ^= v;
            h *= 0x100000001b3L;
        }
        return h;
    }

    /** Counts the rows, sums their digests, keeps the first ones (parallelism 1: one instance). */
    public static class Count extends ProcessFunction<Row, Long> {
        @Override
        public void processElement(Row row, Context ctx, Collector<Long> out) {
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < row.getArity(); i++) {
                Object v = row.getField(i);
                if (v instanceof Long) ids.add((Long) v);
            }
            long[] a = new long[ids.size()];
            for (int i = 0; i < a.length; i++) a[i] = ids.get(i);
            matches++;
            digest += fnv(a);
            if (FIRST.size() < keep) FIRST.add(a);
        }
    }

    public static void main(String[] args) throws Exception {
        String csv = args[0], sqlFile = args[1];
        keep = Integer.parseInt(args[2]);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.executeSql("CREATE TABLE S (type STRING, id BIGINT, name STRING, volume BIGINT, "
            + "price DOUBLE, ts BIGINT, rowtime AS TO_TIMESTAMP_LTZ(ts / 1000, 3), "
            + "WATERMARK FOR rowtime AS rowtime - INTERVAL '0.001' SECOND) WITH ('connector' = 'filesystem', "
            + "'path' = '" + csv + "', 'format' = 'csv')");
        String sql = sqlFile.equals("-") ? "SELECT id FROM S WHERE id < 0"
            : new String(Files.readAllBytes(Paths.get(sqlFile)));
        Table result = tEnv.sqlQuery(sql);
        DataStream<Row> rows = tEnv.toDataStream(result);
        rows.process(new Count()).addSink(new DiscardingSink<>());
        long t0 = System.nanoTime();
        env.execute("ceql-mr-peer");
        double jobSeconds = (System.nanoTime() - t0) / 1e9;
        StringBuilder sb = new StringBuilder();
        sb.append("{\"matches\": ").append(matches).append(", \"digest\": \"")
          .append(Long.toUnsignedString(digest)).append("\", \"job_seconds\": ").append(jobSeconds)
          .append(", \"first\": [");
        for (int i = 0; i < FIRST.size(); i++) {
            if (i > 0) sb.append(", ");
            sb.append(java.util.Arrays.toString(FIRST.get(i)));
        }
        System.out.println(sb.append("]}"));
    }
}
