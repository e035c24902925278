package fusion.output;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import fusion.contract.MetricNames;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * Publishes each Spark partition's output records of a micro-batch in one Kafka transaction, with
 * the batch marker: the executor side of every stage's exactly-once output.
 *
 * <p>A stage's tasks compute their output (acks, events, enriched records, dead letters) and their
 * counts as rows of {@link #INPUT}; this writer, in the same task, publishes them. It runs in the
 * executor's JVM, which lives as long as the executor: the transactional producer of an input
 * partition is made once and serves every later batch of that partition. (A Python worker's
 * producer did not: Spark hands a task to whichever Python worker is idle, so a partition's
 * transactional id moved from worker to worker and each move cost a new producer and a fencing.)
 *
 * <p>The protocol is {@code fusion/kafka/exactly_once.py}'s, with the same marker, so the
 * driver, {@code fusion status} and a Python writer read what this one wrote:
 *
 * <ol>
 *   <li>the partition's transactional id is {@code <prefix>@<task>}, the task key naming the
 *       input partition; a retried task takes the id over and fences its failed attempt;
 *   <li>the marker is the committed offset of the consumer group named like the id on partition 0
 *       of the markers topic: offset = last committed batch + 1, metadata = {@code {q, b, c}};
 *   <li>a batch at or below the marker was published already: nothing is written, and the counts
 *       it committed are returned so that the driver counts it once;
 *   <li>otherwise: begin, send the records, send the new marker to the transaction, commit.
 * </ol>
 */
public final class TransactionalWriter
    implements FlatMapFunction<Iterator<InternalRow>, String> {
  private static final long serialVersionUID = 1L;

  /** What a task hands the writer, in this order: records (topic set) and counts (name set). */
  public static final String INPUT_COLUMNS = "task,topic,key,value,name,amount";

  private static final Map<String, Writer> WRITERS = new ConcurrentHashMap<>();
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private final Spec spec;

  TransactionalWriter(Spec spec) {
    this.spec = spec;
  }

  /**
   * Publish {@code rows} (the columns of {@link #INPUT_COLUMNS}) partition by partition; the
   * tasks' counts as JSON: {@code [[name, value, executor], ...]}. {@code specJson}: see {@link
   * Spec#parse}.
   *
   * <p>It runs the rows' plan as an RDD job of its own, not as a Dataset action: a Dataset
   * action is a SQL execution, which renders the whole plan for the listeners and generates
   * (de)serializer code per task, a fixed cost per micro-batch larger than the work of a small
   * batch.
   */
  public static String publish(Dataset<Row> rows, String specJson) {
    Spec spec = Spec.parse(specJson);
    JavaRDD<InternalRow> input =
        rows.selectExpr(INPUT_COLUMNS.split(",")).queryExecution().toRdd().toJavaRDD();
    // Each task publishes its own records; the driver gets one JSON string of counts per task.
    List<String> results = input.mapPartitions(new TransactionalWriter(spec)).collect();
    return "[" + String.join(",", results) + "]";
  }

  @Override
  public Iterator<String> call(Iterator<InternalRow> rows) {
    String task = null;
    TreeMap<String, Long> counts = new TreeMap<>();
    try (Spool records = new Spool(spec.spoolBytes)) {
      while (rows.hasNext()) {
        InternalRow row = rows.next();
        if (task == null && !row.isNullAt(0)) {
          task = row.getUTF8String(0).toString();
        }
        if (!row.isNullAt(1)) {
          records.add(
              row.getUTF8String(1).toString(),
              row.isNullAt(2) ? null : row.getUTF8String(2).getBytes(),
              row.isNullAt(3) ? null : row.getBinary(3));
        } else if (!row.isNullAt(4)) {
          counts.merge(
              row.getUTF8String(4).toString(), row.isNullAt(5) ? 0L : row.getLong(5), Long::sum);
        }
      }
      if (task == null) {
        return Collections.emptyIterator(); // an empty partition: nothing to publish or mark
      }
      return publishPartition(spec, spec.query, spec.batch, task, records, counts)
          .countRows()
          .iterator();
    }
  }

  /** What publishing one task's output did, and where. */
  public record Outcome(
      Map<String, Long> counts, boolean written, int retries, int spilled, String executor) {
    /**
     * The task's counts as JSON rows {@code [name, value, executor]}: the marker's, whether the
     * batch was written now, and the transient ones (named {@code @...}, never in a marker).
     */
    public List<String> countRows() {
      List<String> out = new ArrayList<>();
      allCounts().forEach((name, value) -> out.add(countRow(name, value, executor)));
      return out;
    }

    /** Every count of the task: its own (but zeros), and the writer's of its publishing. */
    public Map<String, Long> allCounts() {
      Map<String, Long> out = new java.util.LinkedHashMap<>();
      counts.forEach((name, value) -> {
        if (value != 0) {
          out.put(name, value);
        }
      });
      out.put(MetricNames.TASKS_REPLAYED, written ? 0L : 1L);
      if (retries > 0) {
        out.put(MetricNames.KAFKA_RETRIES, (long) retries);
      }
      if (spilled > 0) {
        out.put(MetricNames.TASKS_SPILLED, (long) spilled);
      }
      return out;
    }
  }

  /**
   * Publish one task's {@code records} and {@code counts} of batch {@code batch} of query {@code
   * query} under {@code <prefix>@<task>}, exactly once. Counts named {@code @...} are returned but
   * kept out of the marker: they say which executor did what, which a replay need not repeat.
   */
  public static Outcome publishPartition(
      Spec spec,
      String query,
      long batch,
      String task,
      Spool records,
      Map<String, Long> counts) {
    String id = spec.transactionalPrefix + "@" + task;
    Writer writer = WRITERS.computeIfAbsent(spec.writerKey(id), k -> new Writer(spec, id));
    TreeMap<String, Long> marked = new TreeMap<>();
    TreeMap<String, Long> transient_ = new TreeMap<>();
    counts.forEach((name, value) -> (name.startsWith("@") ? transient_ : marked).put(name, value));
    Writer.Published published;
    int retries;
    synchronized (writer) {
      published = writer.publish(query, batch, records, marked, spec);
      retries = writer.takeRetries();
    }
    TreeMap<String, Long> result = new TreeMap<>(published.counts());
    if (published.written()) {
      result.putAll(transient_);
    }
    return new Outcome(result, published.written(), retries, records.spilled(), executorLabel());
  }

  static String countRow(String name, long value, String executor) {
    ArrayNode row = MAPPER.createArrayNode();
    row.add(name).add(value).add(executor);
    return row.toString();
  }

  /**
   * Which executor ran the task: host and working directory, as a Python worker of the same
   * executor says it ({@code fusion.spark.tasks.executor_label}).
   */
  static String executorLabel() {
    String host;
    try {
      host = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
    } catch (IOException e) {
      try {
        host = java.net.InetAddress.getLocalHost().getHostName();
      } catch (IOException inner) {
        host = "unknown";
      }
    }
    return host + ":" + System.getProperty("user.dir");
  }

  /**
   * The query of the last batch that {@code <prefix>@<task>} committed, or null if it never did:
   * for a driver to skip the tasks of a resumed run that are done (``fusion reconcile``). (librdkafka
   * returns a marker's metadata with stray bytes after it at times, so Python asks here.)
   */
  public static String committedQuery(String specJson, String task) {
    Spec spec = Spec.parse(specJson);
    String id = spec.transactionalPrefix + "@" + task;
    Marker marker =
        Marker.committed(spec.kafka, spec.markersTopic, id, spec.budgetMs);
    return marker == null ? null : marker.query();
  }

  /** Forget this JVM's producers (for tests that restart Kafka between cases). */
  public static void closeAll() {
    WRITERS.values().forEach(Writer::close);
    WRITERS.clear();
  }

  /** What a stage's batch tells its writers; travels to the executors with the task. */
  public static final class Spec implements Serializable {
    private static final long serialVersionUID = 1L;
    final Map<String, String> kafka;
    final String transactionalPrefix;
    final String markersTopic;
    final String query;
    final long batch;
    final long budgetMs;
    final String crashPrefix;
    final Faults faults;
    final long spoolBytes;

    private Spec(JsonNode node) {
      this.kafka = strings(node.get("kafka"));
      this.transactionalPrefix = node.get("transactional_prefix").asText();
      this.markersTopic = node.get("markers_topic").asText();
      this.query = node.get("query").asText();
      this.batch = node.get("batch").asLong();
      this.budgetMs = node.get("budget_ms").asLong();
      this.crashPrefix = node.get("crash_prefix").asText();
      this.faults = new Faults(strings(node.get("faults")));
      this.spoolBytes = node.path("spool_bytes").asLong(16L << 20);
    }

    /**
     * {@code {"kafka": {client options}, "transactional_prefix", "markers_topic", "query",
     * "batch", "budget_ms", "crash_prefix", "faults": {FUSION_CRASH_AT, ...}, "spool_bytes"}}, as {@code
     * fusion.spark.stage} writes it.
     */
    public static Spec parse(String json) {
      try {
        return new Spec(MAPPER.readTree(json));
      } catch (IOException e) {
        throw new IllegalArgumentException("not a writer spec: " + e.getMessage(), e);
      }
    }

    public String query() {
      return query;
    }

    public long batch() {
      return batch;
    }

    /** The bytes of output a task holds in memory before it spills (see {@link Spool}). */
    public long spoolBytes() {
      return spoolBytes;
    }

    /** Writers are shared by id and connection settings (tests run pipelines side by side). */
    String writerKey(String id) {
      return id + " " + new TreeMap<>(kafka);
    }

    private static Map<String, String> strings(JsonNode node) {
      Map<String, String> out = new HashMap<>();
      if (node != null) {
        node.properties().forEach(e -> out.put(e.getKey(), e.getValue().asText()));
      }
      return out;
    }
  }
}
