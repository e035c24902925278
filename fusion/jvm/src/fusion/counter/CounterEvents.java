package fusion.counter;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import fusion.output.Spool;
import fusion.output.TransactionalWriter;
import fusion.contract.CounterRows;
import fusion.contract.MetricNames;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * The counter's events straight to Kafka, with no Python step: each state partition's output rows
 * ({@link CounterRows#OUTPUT}) become the ready, updated and incomplete events and the dead letters,
 * published by {@link TransactionalWriter} in one transaction per partition. Used when another
 * query enriches ({@code enrich_in = "enricher"}); the counter's Python task does the same and
 * enriches too otherwise ({@code fusion.counter.query.decided_events}).
 */
public final class CounterEvents implements FlatMapFunction<Iterator<InternalRow>, String> {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private final TransactionalWriter.Spec spec;
  private final Map<String, String> topics; // ready, updated, incomplete, dlq
  private final long resolutionMs; // of the deadline clock's buckets

  private CounterEvents(TransactionalWriter.Spec spec, Map<String, String> topics) {
    this.spec = spec;
    this.topics = topics;
    this.resolutionMs = Long.parseLong(topics.getOrDefault("resolution_ms", "1000"));
  }

  /**
   * Publish the counter's output rows; the tasks' counts as JSON rows. {@code topicsJson}:
   * {@code {"ready": ..., "updated": ..., "incomplete": ..., "dlq": ..., "resolution_ms": ...}}.
   */
  public static String publish(Dataset<Row> counted, String specJson, String topicsJson) {
    Map<String, String> topics = new TreeMap<>();
    try {
      MAPPER.readTree(topicsJson).properties().forEach(e -> topics.put(e.getKey(), e.getValue().asText()));
    } catch (IOException e) {
      throw new IllegalArgumentException("not a topics map: " + e.getMessage(), e);
    }
    CounterEvents writer = new CounterEvents(TransactionalWriter.Spec.parse(specJson), topics);
    // The events leave from the state partitions' tasks; the driver gets their counts only.
    List<String> rows = counted.queryExecution().toRdd().toJavaRDD().mapPartitions(writer).collect();
    return "[" + String.join(",", rows) + "]";
  }

  @Override
  public Iterator<String> call(Iterator<InternalRow> rows) {
    if (!rows.hasNext()) {
      return Collections.emptyIterator();
    }
    try (Spool records = new Spool(spec.spoolBytes())) {
      return publish(rows, records);
    }
  }

  private Iterator<String> publish(Iterator<InternalRow> rows, Spool records) {
    TreeMap<String, Long> counts = new TreeMap<>();
    String failedAt = Decisions.Now.of(Instant.now().toEpochMilli()).iso();
    while (rows.hasNext()) {
      InternalRow row = rows.next();
      String kind = row.getUTF8String(0).toString();
      String key = row.isNullAt(1) ? null : row.getUTF8String(1).toString();
      switch (kind) {
        case "new" -> counts.merge(MetricNames.COUNTER_KEYS, 1L, Long::sum);
        case "late" -> counts.merge(MetricNames.COUNTER_FIRED_LATE, 1L, Long::sum);
        case "timer", "untimer" -> {
          long due = Long.parseLong(row.getUTF8String(2).toString());
          long bucket = (due + resolutionMs - 1) / resolutionMs * resolutionMs;
          counts.merge(MetricNames.CLOCK_PREFIX + bucket, "timer".equals(kind) ? 1L : -1L, Long::sum);
        }
        case "dead" -> {
          counts.merge(MetricNames.COUNTER_DLQ, 1L, Long::sum);
          add(records, topics.get("dlq"), key == null || key.isEmpty() ? null : key, deadLetter(row, key, failedAt));
        }
        default -> {
          counts.merge(COUNTS.get(kind), 1L, Long::sum);
          // A key whose enriched document goes is said on the updates topic, as its updates.
          String topic = topics.get("deleted".equals(kind) ? "updated" : kind);
          add(records, topic, key, row.getUTF8String(2).toString());
        }
      }
    }
    // The transactional id follows the state partition: a replay recomputes the same events there.
    String task = "p" + TaskContext.get().partitionId();
    return TransactionalWriter.publishPartition(spec, spec.query(), spec.batch(), task, records, counts)
        .countRows()
        .iterator();
  }

  private static final Map<String, String> COUNTS =
      Map.of(
          "ready", MetricNames.COUNTER_FIRED,
          "updated", MetricNames.COUNTER_UPDATED,
          "incomplete", MetricNames.COUNTER_INCOMPLETE,
          "deleted", MetricNames.COUNTER_DELETED);

  private static void add(Spool records, String topic, String key, String value) {
    records.add(
        topic,
        key == null ? null : key.getBytes(StandardCharsets.UTF_8),
        value.getBytes(StandardCharsets.UTF_8));
  }

  /** A rejected ack as {@code fusion.core.events.DeadLetter} writes it (the same fields, in order). */
  static String deadLetter(InternalRow row, String key, String failedAt) {
    ObjectNode out = MAPPER.createObjectNode();
    out.put("reason", row.isNullAt(3) ? null : row.getUTF8String(3).toString());
    out.put("stage", "counter");
    out.putNull("source");
    out.put("topic", row.isNullAt(5) ? null : row.getUTF8String(5).toString());
    out.put("partition", row.isNullAt(6) ? 0 : row.getInt(6));
    out.put("offset", row.isNullAt(7) ? 0L : row.getLong(7));
    if (key == null || key.isEmpty()) {
      out.putNull("key");
    } else {
      out.put("key", key);
    }
    String original = row.isNullAt(4) ? null : row.getUTF8String(4).toString();
    byte[] whole = original == null ? new byte[0] : original.getBytes(StandardCharsets.UTF_8);
    boolean cut = whole.length > ORIGINAL_KEPT_BYTES;
    out.put("original", cut ? head(whole) : original);
    out.put("original_encoding", "utf-8");
    out.put("failed_at", failedAt);
    if (cut) {
      out.put("original_size", whole.length);
      out.put("original_sha256", sha256(whole));
    } else {
      out.putNull("original_size");
      out.putNull("original_sha256");
    }
    return out.toString();
  }

  /**
   * What a dead letter keeps of an ack too large to carry whole (an ack is a few hundred bytes:
   * a larger one is not an ack; its start is enough to tell what it was). Escaped as JSON it
   * stays within the headroom every Fusion topic has ({@code fusion.core.config.MESSAGE_HEADROOM}).
   */
  static final int ORIGINAL_KEPT_BYTES = 8 * 1024;

  private static String head(byte[] whole) {
    int end = ORIGINAL_KEPT_BYTES;
    while (end > 0 && (whole[end] & 0xC0) == 0x80) {
      end--; // not inside a character: back to its first byte
    }
    return new String(whole, 0, end, StandardCharsets.UTF_8);
  }

  private static String sha256(byte[] bytes) {
    try {
      return java.util.HexFormat.of()
          .formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
