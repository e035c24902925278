package fusion.contract;

/**
 * The names the JVM's writers count under: the same as Python's ({@code fusion/observe/names.py},
 * held to these by {@code tests/unit/observe/test_names.py}), read back only by {@code
 * fusion.observe.figures}.
 */
public final class MetricNames {
  private MetricNames() {}

  public static final String COUNTER_KEYS = "counter.keys";
  public static final String COUNTER_FIRED = "counter.fired";
  public static final String COUNTER_FIRED_LATE = "counter.fired_late";
  public static final String COUNTER_UPDATED = "counter.updated";
  public static final String COUNTER_INCOMPLETE = "counter.incomplete";
  public static final String COUNTER_DLQ = "counter.dlq";
  public static final String COUNTER_DELETED = "counter.deleted";

  /** What every task's writer counts: a batch found published, Kafka calls retried, spilled. */
  public static final String TASKS_REPLAYED = "tasks.replayed";
  public static final String KAFKA_RETRIES = "kafka.retries";
  public static final String TASKS_SPILLED = "tasks.spilled_records";

  /** A deadline bucket's timers: clock.&lt;bucket ms&gt;, set and cleared. */
  public static final String CLOCK_PREFIX = "clock.";
}
