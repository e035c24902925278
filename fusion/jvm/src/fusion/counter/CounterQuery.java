package fusion.counter;

import fusion.output.IndexPublisher;
import fusion.contract.CounterRows;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;

/** The counter's Spark plan, called from {@code fusion.counter.query.start_counter}. */
public final class CounterQuery {
  private CounterQuery() {}

  /**
   * The parsed acks grouped by join key into the counter's keyed state; one output row per
   * event.
   */
  public static Dataset<Row> count(Dataset<Row> acks, String rulesJson) {
    return count(acks, rulesJson, null);
  }

  /**
   * As {@link #count(Dataset, String)}, the keys' state starting from {@code initial} (the join
   * key, then {@link AckCounter#STATE}'s columns) when not null: a state rebuilt from
   * Elasticsearch and Kafka for a query started without its checkpoint.
   */
  public static Dataset<Row> count(Dataset<Row> acks, String rulesJson, Dataset<Row> initial) {
    AckCounter processor = new AckCounter(Json.rules(rulesJson));
    KeyValueGroupedDataset<Row, Row> grouped =
        acks.selectExpr(CounterRows.INPUT_COLUMNS.split(","))
            .groupByKey(byKey(), Encoders.row(CounterRows.KEY));
    if (initial == null) {
      return grouped.transformWithState(
          processor, TimeMode.ProcessingTime(), OutputMode.Append(), Encoders.row(CounterRows.OUTPUT));
    }
    KeyValueGroupedDataset<Row, Row> restored =
        initial
            .groupByKey(byKey(), Encoders.row(CounterRows.KEY))
            .mapValues(
                (MapFunction<Row, Row>) r -> RowFactory.create(r.getString(1), r.getString(2),
                    r.getLong(3), r.getString(4), r.getString(5), r.isNullAt(6) ? null : r.getLong(6)),
                Encoders.row(AckCounter.STATE));
    return grouped.transformWithState(
        processor,
        TimeMode.ProcessingTime(),
        OutputMode.Append(),
        restored,
        Encoders.row(CounterRows.OUTPUT),
        Encoders.row(AckCounter.STATE));
  }

  private static MapFunction<Row, Row> byKey() {
    return r -> RowFactory.create(r.getString(0));
  }

  /**
   * The single query's counter ({@code layout = "single"}): the indexer task's output (columns of
   * {@link IndexPublisher#INPUT_COLUMNS}) is published and handed to the counter in the same
   * micro-batch. {@code specJson}: the indexer's writer ({@code TransactionalWriter.Spec}).
   */
  public static Dataset<Row> single(
      Dataset<Row> indexed, String specJson, String rulesJson, Dataset<Row> initial) {
    return count(published(indexed, specJson), rulesJson, initial);
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
