// FlinkCEP peer for bench/flink.py: the same stock stream and patterns as ceql's rows, timed
// from job submission to its end inside one JVM (JVM start and CSV parsing excluded).
// Usage: java -cp <flink jars>:<classes> CepBench <csv> <workload> <rows> <keep>
// Prints one JSON line: {"workload", "events", "matches", "seconds", "first": [[ids...], ...]}.
import java.io.BufferedReader;
import java.io.FileReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.cep.CEP;
import org.apache.flink.cep.functions.PatternProcessFunction;
import org.apache.flink.cep.nfa.aftermatch.AfterMatchSkipStrategy;
import org.apache.flink.cep.pattern.Pattern;
import org.apache.flink.cep.pattern.conditions.IterativeCondition;
import org.apache.flink.cep.pattern.conditions.SimpleCondition;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.legacy.DiscardingSink;
import org.apache.flink.util.Collector;

public class CepBench {
    /** One row of the stock stream. */
    public static class Event {
        public String type;
        public long id;
        public String name;
        public double price;
        public long ts;  // microseconds (the stream's); Flink's timestamp is ts / 1000 (ms)

        public Event() {}
    }

    static final AtomicLong MATCHES = new AtomicLong();
    static volatile long firstEvent = 0;  // nanoTime when the first event left the source
    static volatile long closed = 0;      // nanoTime when the pattern operator closed
    static final List<long[]> FIRST = new ArrayList<>();
    static int keep = 0;

    /** Counts matches; keeps the ids of the first ones (one JVM, parallelism 1). */
    public static class Count extends PatternProcessFunction<Event, Long> {
        private final String[] names;

        Count(String... names) { this.names = names; }

        @Override
        public void close() throws Exception {
            closed = System.nanoTime();  // after the end of input was processed
            super.close();
        }

        @Override
        public void processMatch(Map<String, List<Event>> match, Context ctx, Collector<Long> out) {
            long n = MATCHES.incrementAndGet();
            if (n <= keep) {
                List<Long> ids = new ArrayList<>();
                for (String v : names) {
                    for (Event e : match.getOrDefault(v, List.of())) ids.add(e.id);
                }
                long[] a = new long[ids.size()];
                for (int i = 0; i < a.length; i++) a[i] = ids.get(i);
                synchronized (FIRST) { FIRST.add(a); }
            }
        }
    }

    static SimpleCondition<Event> is(String type) {
        return SimpleCondition.of(e -> e.type.equals(type));
    }

    static SimpleCondition<Event> is(String type, String name) {
        return SimpleCondition.of(e -> e.type.equals(type) && e.name.equals(name));
    }

    /** b.price > a.price, a being the earlier variable's (only) event. */
    static IterativeCondition<Event> higherThan(String earlier) {
        return new IterativeCondition<Event>() {
            @Override
            public boolean filter(Event e, Context<Event> ctx) throws Exception {
                if (!e.type.equals("BUY")) return false;
                for (Event a : ctx.getEventsForPattern(earlier)) {
                    if (!(e.price > a.price)) return false;
                }
                return true;
            }
        };
    }

    public static void main(String[] args) throws Exception {
        String csv = args[0], workload = args[1];
        int rows = Integer.parseInt(args[2]);
        keep = Integer.parseInt(args[3]);
        List<Event> events = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new FileReader(csv))) {
            String line = r.readLine();  // header: type,id,name,volume,price,ts
            while ((line = r.readLine()) != null && events.size() < rows) {
                String[] f = line.split(",");
                Event e = new Event();
                e.type = f[0]; e.id = Long.parseLong(f[1]); e.name = f[2];
                e.price = Double.parseDouble(f[4]); e.ts = Long.parseLong(f[5]);
                events.add(e);
            }
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        DataStream<Event> in = env.fromData(events).assignTimestampsAndWatermarks(
            WatermarkStrategy.<Event>forMonotonousTimestamps().withTimestampAssigner((e, t) -> e.ts / 1000))
            .map(e -> { if (firstEvent == 0) firstEvent = System.nanoTime(); return e; })
            .returns(Event.class);
        AfterMatchSkipStrategy all = AfterMatchSkipStrategy.noSkip();
        Duration tenSeconds = Duration.ofSeconds(10);
        DataStream<Long> out;
        switch (workload) {
            case "p3": {  // SELL(INTC) ; BUY(RIMM) ; BUY(QQQ) WITHIN 10 s, all matches
                Pattern<Event, Event> p = Pattern.<Event>begin("e1", all).where(is("SELL", "INTC"))
                    .followedByAny("e2").where(is("BUY", "RIMM"))
                    .followedByAny("e3").where(is("BUY", "QQQ")).within(tenSeconds);
                out = CEP.pattern(in, p).process(new Count("e1", "e2", "e3"));
                break;
            }
            case "p3_4t": {  // P3 at four times its window (the anchors' p3_w40_none)
                Pattern<Event, Event> p = Pattern.<Event>begin("e1", all).where(is("SELL", "INTC"))
                    .followedByAny("e2").where(is("BUY", "RIMM"))
                    .followedByAny("e3").where(is("BUY", "QQQ")).within(Duration.ofSeconds(40));
                out = CEP.pattern(in, p).process(new Count("e1", "e2", "e3"));
                break;
            }
            case "pair_contiguous": {  // SELL AS a : BUY AS b FILTER b[price > a.price] PARTITION BY [name]
                Pattern<Event, Event> p = Pattern.<Event>begin("a", all).where(is("SELL"))
                    .next("b").where(higherThan("a"));
                out = CEP.pattern(in.keyBy(e -> e.name), p).process(new Count("a", "b"));
                break;
            }
            case "pair_correlated": {  // SELL AS a ; BUY AS b FILTER b[price > a.price] PARTITION BY [name] WITHIN 10 s
                Pattern<Event, Event> p = Pattern.<Event>begin("a", all).where(is("SELL"))
                    .followedByAny("b").where(higherThan("a")).within(tenSeconds);
                out = CEP.pattern(in.keyBy(e -> e.name), p).process(new Count("a", "b"));
                break;
            }
            default:
                throw new IllegalArgumentException("unknown workload " + workload);
        }
        out.addSink(new DiscardingSink<>());
        long t0 = System.nanoTime();
        env.execute("ceql-peer-" + workload);
        double jobSeconds = (System.nanoTime() - t0) / 1e9;
        double seconds = (closed - firstEvent) / 1e9;  // without the local cluster's start and stop
        StringBuilder sb = new StringBuilder();
        sb.append("{\"workload\": \"").append(workload).append("\", \"events\": ").append(events.size())
          .append(", \"matches\": ").append(MATCHES.get()).append(", \"seconds\": ").append(seconds)
          .append(", \"job_seconds\": ").append(jobSeconds)
          .append(", \"first\": [");
        for (int i = 0; i < FIRST.size(); i++) {
            if (i > 0) sb.append(", ");
            sb.append(java.util.Arrays.toString(FIRST.get(i)));
        }
        System.out.println(sb.append("]}"));
    }
}
