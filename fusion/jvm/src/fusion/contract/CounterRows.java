package fusion.contract;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;

/**
 * The counter's rows, in and out: one definition for the JVM, held to Python's ({@code
 * fusion/counter/rows.py}) by {@code tests/unit/counter/test_rows.py}, and the only place that
 * builds them.
 *
 * <p>Below both the counter and the output packages, so that the indexer's publisher (which hands
 * the counter its acks) and the counter read the same schema without depending on each other.
 *
 * <p>Each column means one thing. An ack fills the ack's columns; a count passing through (the
 * indexer's, in a single query) fills {@code count_name}, {@code count_value} and {@code
 * executor}, under the key {@link #COUNTS_KEY}, and comes out of the counter as a {@code count}
 * row with the same three.
 */
public final class CounterRows {
  private CounterRows() {}

  /** What the counter reads, in this order; {@code kind} is {@code ack} or {@code count}. */
  public static final String INPUT_COLUMNS =
      "k,source,acked_at,version,digest,raw,topic,partition,offset,kind,"
          + "count_name,count_value,executor,deleted,ref,ref_version,via";

  /** The rows of {@link #INPUT_COLUMNS}. */
  public static final StructType INPUT =
      StructType.fromDDL(
          "k STRING, source STRING, acked_at STRING, version BIGINT, digest STRING, raw STRING, "
              + "topic STRING, partition INT, offset BIGINT, kind STRING, "
              + "count_name STRING, count_value BIGINT, executor STRING, deleted BOOLEAN, "
              + "ref STRING, ref_version BIGINT, via STRING");

  /** The grouping key of the counter's state. */
  public static final StructType KEY = StructType.fromDDL("k STRING");

  /** What the counter emits: one row per event, timer, dead letter or count. */
  public static final StructType OUTPUT =
      StructType.fromDDL(
          "kind STRING, key STRING, event STRING, reason STRING, raw STRING, topic STRING, "
              + "partition INT, offset BIGINT, "
              + "count_name STRING, count_value BIGINT, executor STRING");

  /**
   * The key of rows that carry counts, not acks: no join key can be it, since Fusion refuses keys
   * with control characters ({@code indexers/records.py}).
   */
  public static final String COUNTS_KEY = "\u0000counts";

  /** An ack for the counter: its join key and fields, and where it was read. */
  public static Row ack(
      String k,
      Object source,
      Object ackedAt,
      Object version,
      Object digest,
      String raw,
      Object topic,
      Object partition,
      Object offset,
      Object deleted,
      Object ref,
      Object refVersion,
      Object via) {
    return RowFactory.create(
        k, source, ackedAt, version, digest, raw, topic, partition, offset, "ack", null, null,
        null, deleted, ref, refVersion, via);
  }

  /** A count on its way through the counter: its name, its value, the executor that counted. */
  public static Row countIn(String name, long value, String executor) {
    return RowFactory.create(
        COUNTS_KEY, null, null, null, null, null, null, null, null, "count", name, value,
        executor, null, null, null, null);
  }

  /** The same count out of the counter. */
  public static Row countOut(String name, long value, String executor) {
    return RowFactory.create(
        "count", null, null, null, null, null, null, null, name, value, executor);
  }

  /** An event, timer or a key's first sighting out of the counter ({@code event} may be null). */
  public static Row event(String kind, String key, String event) {
    return RowFactory.create(kind, key, event, null, null, null, null, null, null, null, null);
  }

  /** A rejected ack out of the counter, for the dead-letter topic. */
  public static Row dead(
      String key, String reason, String raw, String topic, int partition, long offset) {
    return RowFactory.create(
        "dead", key, null, reason, raw, topic, partition, offset, null, null, null);
  }
}
