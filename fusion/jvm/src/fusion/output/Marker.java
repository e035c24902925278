package fusion.output;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The last batch a transactional id committed: its query, batch id and cumulative counts, kept as
 * the metadata of the id's consumer-group offset on the markers topic. Python reads and writes the
 * same marker ({@code fusion/kafka/markers.py}).
 */
public record Marker(String query, long batch, Map<String, Long> counts) {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /**
   * The committed marker of {@code id}, read after init: no transaction of ours is pending, and
   * the stable read waits out one whose commit is still being written.
   */
  static Marker read(
      Map<String, String> kafka, String markersTopic, String id, long budgetMs) {
    Properties props = new Properties();
    props.putAll(kafka);
    props.put("group.id", id);
    props.put("isolation.level", "read_committed");
    props.put("enable.auto.commit", "false");
    props.put("key.deserializer", ByteArrayDeserializer.class.getName());
    props.put("value.deserializer", ByteArrayDeserializer.class.getName());
    TopicPartition partition = new TopicPartition(markersTopic, 0);
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      OffsetAndMetadata found =
          consumer.committed(Set.of(partition), Duration.ofMillis(budgetMs)).get(partition);
      return found == null ? null : parse(found.metadata());
    }
  }

  /**
   * The marker of {@code id}'s last committed transaction, for a driver that plans which tasks
   * still have work, without waiting on a transaction still open. A consumer's {@code committed()}
   * always asks for stable offsets: it waits, up to the whole retry budget, for the open
   * transaction of a task that died to time out. The admin client reads what is committed now;
   * a task found not done is redone, and its writer (which reads stable, after its init fenced the
   * dead one) still publishes it once.
   */
  static Marker committed(
      Map<String, String> kafka, String markersTopic, String id, long budgetMs) {
    Properties props = new Properties();
    props.putAll(kafka);
    TopicPartition partition = new TopicPartition(markersTopic, 0);
    try (Admin admin = Admin.create(props)) {
      OffsetAndMetadata found =
          admin
              .listConsumerGroupOffsets(id, new ListConsumerGroupOffsetsOptions().requireStable(false))
              .partitionsToOffsetAndMetadata()
              .get(budgetMs, TimeUnit.MILLISECONDS)
              .get(partition);
      return found == null ? null : parse(found.metadata());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted reading the marker of " + id, e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException(
          "Kafka gave no marker of " + id + " (" + e.getMessage() + ")", e);
    }
  }

  /** Offset metadata is limited in size: the JSON goes deflated, as {@code markers.PACKED}. */
  static final String PACKED = "z:";

  public static String metadata(Marker marker) {
    ObjectNode node = MAPPER.createObjectNode();
    node.put("q", marker.query()).put("b", marker.batch());
    ObjectNode counts = node.putObject("c");
    marker.counts().forEach(counts::put);
    byte[] json = node.toString().getBytes(StandardCharsets.UTF_8);
    Deflater deflater = new Deflater(9);
    deflater.setInput(json);
    deflater.finish();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buffer = new byte[4096];
    while (!deflater.finished()) {
      out.write(buffer, 0, deflater.deflate(buffer));
    }
    deflater.end();
    return PACKED + Base64.getEncoder().encodeToString(out.toByteArray());
  }

  public static Marker parse(String metadata) {
    try {
      String text = metadata == null ? "" : metadata;
      if (text.startsWith(PACKED)) {
        text = inflate(text.substring(PACKED.length()));
      }
      JsonNode node = MAPPER.readTree(text);
      if (node == null || !node.has("q") || !node.has("b")) {
        return null;
      }
      Map<String, Long> counts = new TreeMap<>();
      JsonNode c = node.get("c");
      if (c != null) {
        c.properties().forEach(e -> counts.put(e.getKey(), e.getValue().asLong()));
      }
      return new Marker(node.get("q").asText(), node.get("b").asLong(), counts);
    } catch (IOException | DataFormatException | IllegalArgumentException e) {
      return null;
    }
  }

  /** Base64 up to the first character outside its alphabet (stray bytes go), inflated. */
  private static String inflate(String packed) throws DataFormatException {
    int end = 0;
    while (end < packed.length() && BASE64.indexOf(packed.charAt(end)) >= 0) {
      end++;
    }
    Inflater inflater = new Inflater();
    inflater.setInput(Base64.getDecoder().decode(packed.substring(0, end)));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buffer = new byte[4096];
    while (!inflater.finished()) {
      int n = inflater.inflate(buffer);
      if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
        throw new DataFormatException("truncated marker");
      }
      out.write(buffer, 0, n);
    }
    inflater.end();
    return out.toString(StandardCharsets.UTF_8);
  }

  private static final String BASE64 =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
}
