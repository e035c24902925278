package fusion.counter;

import fusion.output.IndexPublisher;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.StructType;

/** The counter's Spark plan, called from {@code fusion.counter.query.start_counter}. */
public final class CounterQuery {
  private CounterQuery() {}

  /**
   * What the counter reads, in this order (see {@code fusion.counter.query.parsed_acks}); {@code
   * kind} is {@code ack}, or {@code count} for counts passing through ({@link IndexPublisher}).
   */
  public static final String INPUT_COLUMNS =
      "k,source,acked_at,version,digest,raw,topic,partition,offset,kind";

  /** The rows of {@link #INPUT_COLUMNS}. */
  public static final StructType INPUT =
      StructType.fromDDL(
          "k STRING, source STRING, acked_at STRING, version BIGINT, digest STRING, raw STRING, "
              + "topic STRING, partition INT, offset BIGINT, kind STRING");

  static final StructType KEY = StructType.fromDDL("k STRING");
  static final StructType OUTPUT =
      StructType.fromDDL(
          "kind STRING, key STRING, event STRING, reason STRING, raw STRING, topic STRING, "
              + "partition INT, offset BIGINT");

  /**
   * The parsed acks grouped by join key into the counter's keyed state; one output row per
   * event.
   */
  public static Dataset<Row> count(Dataset<Row> acks, String rulesJson) {
    AckCounter processor = new AckCounter(Json.rules(rulesJson));
    return acks.selectExpr(INPUT_COLUMNS.split(","))
        .groupByKey((MapFunction<Row, Row>) r -> RowFactory.create(r.getString(0)), Encoders.row(KEY))
        .transformWithState(
            processor, TimeMode.ProcessingTime(), OutputMode.Append(), Encoders.row(OUTPUT));
  }

  /**
   * The single query's counter ({@code layout = "single"}): the indexer task's output (columns of
   * {@link IndexPublisher#INPUT_COLUMNS}) is published and handed to the counter in the same
   * micro-batch. {@code specJson}: the indexer's writer ({@code TransactionalWriter.Spec}).
   */
  public static Dataset<Row> single(
      Dataset<Row> indexed, String specJson, String rulesJson) {
    return count(published(indexed, specJson), rulesJson);
  }

  /**
   * The single query's acks, published by the indexer's writer and handed on ({@link
   * IndexPublisher}), for either counter engine.
   */
  public static Dataset<Row> published(Dataset<Row> indexed, String specJson) {
    return indexed
        .selectExpr(IndexPublisher.INPUT_COLUMNS.split(","))
        .mapPartitions(new IndexPublisher(specJson), Encoders.row(IndexPublisher.OUTPUT));
  }
}
