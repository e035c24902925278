package fusion.output;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One transactional id's producer and marker, kept by the executor's JVM across batches (see
 * {@link TransactionalWriter} for the protocol).
 */
final class Writer {
  /** What {@link #publish} did: the marker's counts, and whether it wrote the batch now. */
  record Published(Map<String, Long> counts, boolean written) {}

  /** Another process took this transactional id over; the batch is not ours to publish. */
  static final class FencedError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    FencedError(String id) {
      super(
          "FencedError: another process took over the transactional id "
              + id
              + " (is the same query running twice?)");
    }
  }

  private final String id;
  private final Map<String, String> kafka;
  private final String markersTopic;
  static final long BLOCK_MS = 10_000;
  private final long budgetMs;
  private KafkaProducer<byte[], byte[]> producer;
  private KafkaProducer<byte[], byte[]> crashed; // left open by a simulated crash
  private Marker marker;
  private int retries;

  Writer(TransactionalWriter.Spec spec, String id) {
    this.id = id;
    this.kafka = spec.kafka;
    this.markersTopic = spec.markersTopic;
    this.budgetMs = spec.budgetMs;
  }

  int retries() {
    return retries;
  }

  int takeRetries() {
    int taken = retries;
    retries = 0;
    return taken;
  }

  /** Publish {@code records} and the marker of {@code batch} in one transaction, once. */
  Published publish(
      String query,
      long batch,
      Iterable<ProducerRecord<byte[], byte[]>> records,
      Map<String, Long> counts,
      TransactionalWriter.Spec spec) {
    long deadline = System.currentTimeMillis() + budgetMs;
    boolean tookOver = false;
    long backoff = 200;
    while (true) {
      try {
        if (producer == null) {
          start();
        }
        if (marker != null && marker.query().equals(query) && batch <= marker.batch()) {
          return new Published(marker.counts(), false);
        }
        Marker next = new Marker(query, batch, new TreeMap<>(counts));
        transaction(records, next, spec);
        marker = next;
        spec.faults.point(spec.crashPrefix + ".after_commit");
        return new Published(next.counts(), true);
      } catch (Faults.Crash crash) {
        // A simulated kill: whatever is open stays open, as after kill -9; the retried task's
        // new producer takes the id over (aborting it), and then this one is closed.
        crashed = producer;
        producer = null;
        throw crash;
      } catch (ProducerFencedException | InvalidProducerEpochException e) {
        drop();
        if (tookOver) {
          throw new FencedError(id);
        }
        tookOver = true; // the attempt this task replaces held the id: take it over, once
      } catch (AuthorizationException | AuthenticationException e) {
        drop();
        throw refused("KafkaAccessError", e);
      } catch (KafkaException e) {
        if (fenced(e) && !tookOver) {
          drop();
          tookOver = true;
          continue;
        }
        abortOrDrop();
        Throwable cause = refusal(e);
        if (cause != null) {
          // Another attempt would meet the same refusal: say which, now, not after the budget.
          throw refused(
              cause instanceof RecordTooLargeException ? "MessageTooLargeError" : "KafkaAccessError",
              cause);
        }
        if (!retriable(e)) {
          throw refused("KafkaRefusedError", e);
        }
        retries++;
        if (System.currentTimeMillis() + backoff > deadline) {
          throw new IllegalStateException(
              "TransactionError: the Kafka transaction of "
                  + id
                  + " failed for "
                  + budgetMs / 1000
                  + " s: "
                  + e,
              e);
        }
        sleep(backoff);
        backoff = Math.min(backoff * 2, 5_000);
      }
    }
  }

  private void transaction(
      Iterable<ProducerRecord<byte[], byte[]>> records,
      Marker next,
      TransactionalWriter.Spec spec) {
    producer.beginTransaction();
    for (ProducerRecord<byte[], byte[]> record : records) {
      producer.send(record);
    }
    Map<TopicPartition, OffsetAndMetadata> position =
        Map.of(
            new TopicPartition(markersTopic, 0),
            new OffsetAndMetadata(next.batch() + 1, Marker.metadata(next)));
    producer.sendOffsetsToTransaction(position, new ConsumerGroupMetadata(id));
    spec.faults.point(spec.crashPrefix + ".before_commit");
    producer.commitTransaction();
  }

  private void start() {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put("transactional.id", id);
    props.put("enable.idempotence", "true");
    props.put("transaction.timeout.ms", String.valueOf(budgetMs));
    props.put("linger.ms", "5");
    // A call blocks this long at most, then the publish loop retries it with backoff (each
    // retry counted, kafka.retries) until the budget: an outage is retried, not waited out.
    props.put("max.block.ms", String.valueOf(Math.min(budgetMs, BLOCK_MS)));
    props.put("delivery.timeout.ms", String.valueOf(Math.max(budgetMs, 120_000)));
    props.put("key.serializer", ByteArraySerializer.class.getName());
    props.put("value.serializer", ByteArraySerializer.class.getName());
    KafkaProducer<byte[], byte[]> created = new KafkaProducer<>(props);
    try {
      created.initTransactions();
      marker = Marker.read(kafka, markersTopic, id, budgetMs);
    } catch (RuntimeException e) {
      created.close(Duration.ZERO);
      throw e;
    }
    producer = created;
    if (crashed != null) {
      crashed.close(Duration.ZERO); // fenced by the init above: its transaction is aborted
      crashed = null;
    }
  }

  /**
   * The error the driver reads: the name of Fusion's error class first ({@code
   * fusion.spark.causes.root_cause} finds it in Spark's text), so the command ends with that
   * class's line and exit code.
   */
  private IllegalStateException refused(String fusionError, Throwable cause) {
    String name = cause.getClass().getSimpleName();
    return new IllegalStateException(
        fusionError + ": the transaction of " + id + " (" + name + ": " + cause.getMessage() + ")",
        cause);
  }

  /** A refusal in {@code e}'s causes that no retry gets past: a record too large, an ACL. */
  private static Throwable refusal(KafkaException e) {
    return cause(
        e,
        RecordTooLargeException.class,
        AuthorizationException.class,
        AuthenticationException.class);
  }

  /**
   * Whether another attempt may succeed. Most failures of a transaction may pass (a broker away,
   * a coordinator moving, an aborted transaction); a request the broker cannot take never does.
   */
  private static boolean retriable(KafkaException e) {
    return cause(
            e,
            UnsupportedVersionException.class,
            InvalidConfigurationException.class,
            InvalidTopicException.class)
        == null;
  }

  private static boolean fenced(KafkaException e) {
    return cause(e, ProducerFencedException.class, InvalidProducerEpochException.class) != null;
  }

  /** The first of {@code e}'s causes (itself included) of one of {@code kinds}, or null. */
  @SafeVarargs
  private static Throwable cause(Throwable e, Class<? extends Throwable>... kinds) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      for (Class<? extends Throwable> kind : kinds) {
        if (kind.isInstance(t)) {
          return t;
        }
      }
    }
    return null;
  }

  private void abortOrDrop() {
    if (producer == null) {
      return;
    }
    try {
      producer.abortTransaction();
    } catch (RuntimeException ignored) {
      drop(); // cannot even abort: a new producer's init will
    }
  }

  private void drop() {
    if (producer != null) {
      KafkaProducer<byte[], byte[]> old = producer;
      producer = null;
      try {
        old.close(Duration.ZERO);
      } catch (RuntimeException ignored) {
        // closing a fenced producer may fail; it is gone either way
      }
    }
  }

  void close() {
    drop();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
