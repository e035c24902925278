package fusion.counter;

import fusion.counter.Decisions.Ack;
import fusion.counter.Decisions.Decision;
import fusion.counter.Decisions.Event;
import fusion.counter.Decisions.Now;
import fusion.counter.Decisions.Rejected;
import fusion.contract.CounterRows;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessorWithInitialState;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.StructType;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's side of the counter: state and timer I/O around {@link Decisions}.
 *
 * <p>Input rows are the parsed acks ({@code CounterRows.INPUT_COLUMNS}); output rows are
 * {@code CounterRows.OUTPUT}: {@code new} (a key seen for the first time, for the pending
 * count), {@code late} (a key reported incomplete that fires now), {@code ready}, {@code updated}, {@code incomplete}, {@code dead} (a rejected ack) and
 * {@code timer} and {@code untimer} (a deadline registered or deleted, its epoch ms as the event,
 * for the deadline clock: {@code fusion/counter/clock.py}); in a single query also {@code count} (the indexer's counts,
 * passed through: name as key, executor as reason, value as offset).
 */
public final class AckCounter extends StatefulProcessorWithInitialState<Row, Row, Row, Row> {
  static final String STATE_NAME = "key_state"; // fusion.counter.state.STATE_VAR
  static final StructType STATE =
      StructType.fromDDL(
          "seen STRING, first_ack_at STRING, started_ms BIGINT, fired_at STRING, "
              + "expired_at STRING, deadline_ms BIGINT");

  private final Rules rules;
  private transient ValueState<Row> state;

  AckCounter(Rules rules) {
    this.rules = rules;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    // Longer than state_ttl: a key's TTL deadline reports it before Spark drops its state.
    Long ttlMs = rules.stateTtlMs();
    TTLConfig ttl =
        ttlMs == null
            ? TTLConfig.NONE()
            : TTLConfig.apply(Duration.ofMillis(Rules.retentionMs(ttlMs)));
    state = getHandle().getValueState(STATE_NAME, Encoders.row(STATE), ttl);
  }

  @Override
  public Iterator<Row> handleInputRows(Row key, Iterator<Row> rows, TimerValues timerValues) {
    String k = key.getString(0);
    if (CounterRows.COUNTS_KEY.equals(k)) {
      return passCounts(rows); // the indexer's counts in a single query: no state of theirs
    }
    KeyState before = load();
    List<Ack> acks = new ArrayList<>();
    while (rows.hasNext()) {
      Row r = rows.next();
      acks.add(
          new Ack(
              r.getString(1),
              r.getString(2),
              r.getString(5),
              r.getString(6),
              r.getInt(7),
              r.getLong(8),
              r.isNullAt(3) ? null : r.getLong(3),
              r.getString(4),
              !r.isNullAt(13) && r.getBoolean(13),
              r.getString(14),
              r.isNullAt(15) ? 0 : r.getLong(15),
              Json.parseVia(r.getString(16))));
    }
    return apply(k, before, Decisions.decide(k, before, acks, rules, now(timerValues)));
  }

  @Override
  public Iterator<Row> handleExpiredTimer(
      Row key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    String k = key.getString(0);
    KeyState before = load();
    return apply(k, before, Decisions.onDeadline(k, before, rules, now(timerValues)));
  }

  /**
   * A key's state rebuilt from Elasticsearch and Kafka ({@code fusion.counter.rebuild}), in the
   * first batch of a query started without its checkpoint: stored with the timer it needs.
   */
  @Override
  public void handleInitialState(Row key, Row initial, TimerValues timerValues) {
    KeyState restored = fromRow(initial);
    Long timer = Decisions.restoredTimer(restored, rules, now(timerValues));
    if (timer != null) {
      getHandle().registerTimer(timer);
      restored = restored.deadline(timer);
    }
    state.update(toRow(restored));
  }

  /** The indexer's counts (name, value, executor) on to the output, as {@code count} rows. */
  private static Iterator<Row> passCounts(Iterator<Row> rows) {
    List<Row> out = new ArrayList<>();
    while (rows.hasNext()) {
      Row r = rows.next();
      out.add(
          CounterRows.countOut(r.getString(10), r.getLong(11), r.getString(12)));
    }
    return CollectionConverters.asScala(out.iterator());
  }

  // The batch's timestamp, not the wall clock: a replayed batch decides the same.
  private static Now now(TimerValues timerValues) {
    return Now.of(timerValues.getCurrentProcessingTimeInMs());
  }

  private KeyState load() {
    return state.exists() ? fromRow(state.get()) : null;
  }

  private static KeyState fromRow(Row row) {
    return new KeyState(
        Json.seen(row.getString(0)),
        row.getString(1),
        row.getLong(2),
        row.getString(3),
        row.getString(4),
        row.isNullAt(5) ? null : row.getLong(5));
  }

  private static Row toRow(KeyState s) {
    return RowFactory.create(
        Json.seen(s.seen()), s.firstAckAt(), s.startedMs(), s.firedAt(), s.expiredAt(), s.deadlineMs());
  }

  private Iterator<Row> apply(String key, KeyState before, Decision decision) {
    if (decision.deleteTimer() != null) {
      getHandle().deleteTimer(decision.deleteTimer());
    }
    if (decision.registerTimer() != null) {
      getHandle().registerTimer(decision.registerTimer());
    }
    KeyState after = decision.state();
    // Only a change is written: an update restarts the state's TTL.
    if (after != null && !Objects.equals(after, before)) {
      state.update(toRow(after));
    }
    List<Row> out = new ArrayList<>();
    if (decision.registerTimer() != null) {
      out.add(
          CounterRows.event("timer", key, String.valueOf(decision.registerTimer())));
    }
    if (decision.deleteTimer() != null) {
      // The clock then needs no batch for it: a key that fires early costs no empty batch.
      out.add(
          CounterRows.event("untimer", key, String.valueOf(decision.deleteTimer())));
    }
    if (decision.newKey()) {
      out.add(CounterRows.event("new", key, null));
    }
    if (before != null && before.expiredAt() != null && before.firedAt() == null
        && after != null && after.firedAt() != null) {
      // Reported incomplete, then fired by a late source: counted once as pending, not twice.
      out.add(CounterRows.event("late", key, null));
    }
    for (Event event : decision.events()) {
      out.add(CounterRows.event(event.kind(), key, Json.event(event)));
    }
    for (Rejected r : decision.rejected()) {
      Ack ack = r.ack();
      out.add(
          CounterRows.dead(key, r.reason(), ack.raw(), ack.topic(), ack.partition(), ack.offset()));
    }
    return CollectionConverters.asScala(out.iterator());
  }
}
