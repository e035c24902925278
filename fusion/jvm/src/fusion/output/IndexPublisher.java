package fusion.output;

import fusion.contract.CounterRows;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.TreeMap;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * The hand-over from indexing to counting inside one query ({@code layout = "single"}): publishes
 * an indexer task's acks and dead letters exactly once, and passes its acks on to the counter's
 * keyed state in the same micro-batch, with the task's counts behind them.
 *
 * <p>It runs in the streaming plan, between the indexer's Python task and the counter's {@code
 * groupByKey}, so it learns the micro-batch from the job Spark runs it in (its {@code
 * sql.streaming.queryId} and {@code streaming.sql.batchId} local properties). A replayed batch
 * finds its marker and publishes nothing, but still hands the same acks on: the counter rebuilds
 * the batch's decisions from them and from the state of before the batch.
 *
 * <p>Counts travel as rows of the reserved key {@link CounterRows#COUNTS_KEY}, which the counter passes
 * through untouched: so the batch's counts reach the driver with the counter's own, through the
 * counter's exactly-once output.
 */
public final class IndexPublisher implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;

  /** The indexer task's rows: its records and counts, and for each ack the counter's fields. */
  public static final String INPUT_COLUMNS =
      "task,topic,key,value,name,amount,k,source,acked_at,version,digest,s_topic,s_partition,"
          + "s_offset,deleted,ref,ref_version,via";

  /** What the counter reads. */
  public static final StructType OUTPUT = CounterRows.INPUT;

  private final TransactionalWriter.Spec spec;

  public IndexPublisher(String specJson) {
    this.spec = TransactionalWriter.Spec.parse(specJson);
  }

  @Override
  public Iterator<Row> call(Iterator<Row> rows) {
    try (Spool records = new Spool(spec.spoolBytes)) {
      return publish(rows, records);
    }
  }

  private Iterator<Row> publish(Iterator<Row> rows, Spool records) {
    String task = null;
    TreeMap<String, Long> counts = new TreeMap<>();
    List<Row> acks = new ArrayList<>();
    while (rows.hasNext()) {
      Row row = rows.next();
      if (task == null && !row.isNullAt(0)) {
        task = row.getString(0);
      }
      byte[] value = row.isNullAt(3) ? null : (byte[]) row.get(3);
      if (!row.isNullAt(1)) {
        String key = row.isNullAt(2) ? null : row.getString(2);
        records.add(
            row.getString(1), key == null ? null : key.getBytes(StandardCharsets.UTF_8), value);
        if (!row.isNullAt(6)) {
          acks.add(ack(row, value));
        }
      } else if (!row.isNullAt(6)) {
        acks.add(ack(row, value)); // read back from the slots topic: handed on, not published
      } else if (!row.isNullAt(4)) {
        counts.merge(row.getString(4), row.isNullAt(5) ? 0L : row.getLong(5), Long::sum);
      }
    }
    if (task == null) {
      return Collections.emptyIterator();
    }
    TaskContext context = TaskContext.get();
    String query = context.getLocalProperty("sql.streaming.queryId");
    long batch = Long.parseLong(context.getLocalProperty("streaming.sql.batchId"));
    TransactionalWriter.Outcome outcome =
        TransactionalWriter.publishPartition(spec, query, batch, task, records, counts);
    List<Row> out = new ArrayList<>(acks);
    // The writer's own counts too (a batch found published, Kafka calls retried, spilled).
    outcome.allCounts().forEach((name, value) -> out.add(count(name, value, outcome.executor())));
    return out.iterator();
  }

  /** The counter's row of an ack row: its fields, and the ack's JSON for a dead letter. */
  private static Row ack(Row row, byte[] value) {
    return CounterRows.ack(
        row.getString(6),
        row.getString(7),
        row.getString(8),
        row.isNullAt(9) ? null : row.getLong(9),
        row.isNullAt(10) ? null : row.getString(10),
        value == null ? null : new String(value, StandardCharsets.UTF_8),
        row.getString(11),
        row.getInt(12),
        row.getLong(13),
        row.isNullAt(14) ? null : row.getBoolean(14),
        row.isNullAt(15) ? null : row.getString(15),
        row.isNullAt(16) ? null : row.getLong(16),
        row.isNullAt(17) ? null : row.getString(17));
  }

  /** A count, for the counter to pass through. */
  private static Row count(String name, long value, String executor) {
    return CounterRows.countIn(name, value, executor);
  }
}
