package fusion.contract;

import org.apache.spark.sql.types.StructType;

/**
 * The counter's rows, in and out: one definition for the JVM, held to Python's ({@code
 * fusion/counter/rows.py}) by {@code tests/unit/counter/test_rows.py}.
 *
 * <p>Below both the counter and the output packages, so that the indexer's publisher (which hands
 * the counter its acks) and the counter read the same schema without depending on each other.
 */
public final class CounterRows {
  private CounterRows() {}

  /**
   * What the counter reads, in this order; {@code kind} is {@code ack}, or {@code count} for
   * counts passing through (rows of {@link #COUNTS_KEY}).
   */
  public static final String INPUT_COLUMNS =
      "k,source,acked_at,version,digest,raw,topic,partition,offset,kind";

  /** The rows of {@link #INPUT_COLUMNS}. */
  public static final StructType INPUT =
      StructType.fromDDL(
          "k STRING, source STRING, acked_at STRING, version BIGINT, digest STRING, raw STRING, "
              + "topic STRING, partition INT, offset BIGINT, kind STRING");

  /** The grouping key of the counter's state. */
  public static final StructType KEY = StructType.fromDDL("k STRING");

  /** What the counter emits: one row per event. */
  public static final StructType OUTPUT =
      StructType.fromDDL(
          "kind STRING, key STRING, event STRING, reason STRING, raw STRING, topic STRING, "
              + "partition INT, offset BIGINT");

  /**
   * The key of rows that carry counts, not acks: no join key can be it, since Fusion refuses keys
   * with control characters ({@code indexers/records.py}).
   */
  public static final String COUNTS_KEY = "\u0000counts";
}
