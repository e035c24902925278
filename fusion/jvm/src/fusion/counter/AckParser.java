package fusion.counter;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import fusion.contract.CounterRows;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.json.JSONOptions;

/**
 * The ack topic's records as the counter's input rows ({@link CounterRows#INPUT_COLUMNS}): the
 * fields the counter reads of each ack, read exactly as the counter's {@code from_json(value,
 * ACK_SPARK_SCHEMA)} read them, one Jackson factory per task.
 *
 * <p>Why not {@code from_json}: Spark pruned its schema per selected field, so it parsed each ack
 * five times, through a character reader, and held the counter alone to about two thirds of this
 * parser's rate (docs/benchmark.md). Why "exactly": malformed acks become dead letters whose
 * reason depends on which fields survive, so the two must agree on every input: a string field
 * takes any JSON value (a number or an object becomes its JSON text), a field of the wrong type
 * alone is null, malformed JSON nulls each field whose own reading meets the error, the last of a
 * repeated field wins, and the factory is Spark's own (single quotes allowed, the same limits).
 * Well-formed acks take one pass over the bytes; any other falls back to reading field by field as
 * Spark did. {@code tests/integration/test_ack_parser.py} holds the two to the same rows.
 */
public final class AckParser implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;

  /** What the parser reads of a Kafka source's rows. */
  static final String[] KAFKA_COLUMNS = {"key", "value", "topic", "partition", "offset"};

  /** The ack's fields the counter reads, in the order of {@link CounterRows#INPUT_COLUMNS}. */
  private static final List<String> FIELDS =
      List.of(
          "key", "source", "acked_at", "version", "digest", "deleted", "ref", "ref_version",
          "via");

  private static final int VERSION = FIELDS.indexOf("version"); // BIGINT
  private static final int REF_VERSION = FIELDS.indexOf("ref_version"); // BIGINT
  private static final int DELETED = FIELDS.indexOf("deleted"); // the one BOOLEAN; the rest STRING

  /** The counter's input rows of a stream of the ack topic (Kafka source columns). */
  public static Dataset<Row> parse(Dataset<Row> kafka) {
    return kafka
        .selectExpr(KAFKA_COLUMNS)
        .mapPartitions(new AckParser(), Encoders.row(CounterRows.INPUT));
  }

  @Override
  public Iterator<Row> call(Iterator<Row> records) {
    JsonFactory factory = sparkFactory();
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        return records.hasNext();
      }

      @Override
      public Row next() {
        return row(factory, records.next());
      }
    };
  }

  /** The factory {@code from_json} parses with when given no options. */
  static JsonFactory sparkFactory() {
    scala.collection.immutable.Map<String, String> none = scala.collection.immutable.Map$.MODULE$.empty();
    return new JSONOptions(none, "UTC", "").buildJsonFactory();
  }

  private static Row row(JsonFactory factory, Row record) {
    byte[] kafkaKey = (byte[]) record.get(0);
    byte[] value = (byte[]) record.get(1);
    Object[] ack = fields(factory, value);
    String key = (String) ack[0];
    if (key == null) { // A malformed ack still needs a group: its Kafka key (or "") gets it one.
      key = kafkaKey == null ? "" : new String(kafkaKey, StandardCharsets.UTF_8);
    }
    return CounterRows.ack(
        key,
        ack[1],
        ack[2],
        ack[3],
        ack[4],
        value == null ? null : new String(value, StandardCharsets.UTF_8),
        record.get(2),
        record.get(3),
        record.get(4),
        ack[5],
        ack[6],
        ack[7],
        ack[8]);
  }

  /** The values of {@link #FIELDS} in {@code value}, as {@code from_json} reads them. */
  static Object[] fields(JsonFactory factory, byte[] value) {
    Object[] out = new Object[FIELDS.size()];
    if (value == null) {
      return out;
    }
    if (plainUtf8(value)) {
      try {
        // One pass straight from the bytes gives what from_json gives whenever no field
        // fails to convert: converting a value reads the same tokens as skipping it.
        return fields(factory, factory.createParser(value), -1);
      } catch (IOException | RuntimeException e) {
        // A field failed, or the JSON is malformed: read it field by field, as from_json did.
      }
    }
    for (int field = 0; field < out.length; field++) {
      out[field] = field(factory, value, field);
    }
    return out;
  }

  /**
   * One field as the counter's {@code from_json(value, ACK_SPARK_SCHEMA)[field]} reads it: Spark
   * prunes that expression's schema to the one field (OptimizeCsvJsonExprs), so each field was
   * parsed on its own, through a UTF-8 reader, every other value skipped.
   */
  private static Object field(JsonFactory factory, byte[] value, int field) {
    var reader = new InputStreamReader(new ByteArrayInputStream(value), StandardCharsets.UTF_8);
    try {
      return fields(factory, factory.createParser(reader), field)[field];
    } catch (IOException | RuntimeException e) {
      return null; // JSON that from_json cannot read: the field is null
    }
  }

  /**
   * Valid UTF-8 without a byte order mark: where the byte parser reads what from_json's reader
   * reads (it skips a byte order mark, and may read invalid bytes otherwise than the reader's
   * replacement characters).
   */
  static boolean plainUtf8(byte[] value) {
    for (byte b : value) {
      if (b < 0) {
        return utf8(value) && !bom(value);
      }
    }
    return true;
  }

  private static boolean bom(byte[] value) {
    return value.length >= 3 && value[0] == (byte) 0xEF && value[1] == (byte) 0xBB
        && value[2] == (byte) 0xBF;
  }

  private static boolean utf8(byte[] value) {
    try {
      StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(value));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }

  /**
   * Spark's {@code JacksonParser.convertObject} for a root struct of {@link #FIELDS}, or of the
   * one field {@code only} (-1: all). With every field, a field that fails to convert throws (the
   * one-pass path); with one, it keeps the value it had (Spark's partial result).
   */
  private static Object[] fields(JsonFactory factory, JsonParser parser, int only)
      throws IOException {
    try (parser) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        // Empty, a scalar, an array or null: from_json's row is null.
        throw new IOException("not a JSON object");
      }
      Object[] out = new Object[FIELDS.size()];
      while (nextUntilEnd(parser)) {
        int index = FIELDS.indexOf(parser.currentName());
        if (index < 0 || (only >= 0 && index != only)) {
          parser.skipChildren();
          continue;
        }
        try {
          out[index] =
              index == VERSION || index == REF_VERSION
                  ? longValue(parser)
                  : index == DELETED ? booleanValue(parser) : stringValue(factory, parser);
        } catch (IOException | RuntimeException e) {
          if (only < 0) {
            throw e;
          }
          parser.skipChildren(); // the field keeps what it had: Spark's partial result
        }
      }
      return out;
    }
  }

  private static boolean nextUntilEnd(JsonParser parser) throws IOException {
    JsonToken token = parser.nextToken();
    return token != null && token != JsonToken.END_OBJECT;
  }

  /** The current value as a BIGINT: an integer token, null for JSON null, else a failure. */
  private static Long longValue(JsonParser parser) throws IOException {
    JsonToken token = valueToken(parser);
    if (token == null || token == JsonToken.VALUE_NULL) {
      return null;
    }
    if (token == JsonToken.VALUE_NUMBER_INT) {
      return parser.getLongValue();
    }
    throw new IOException("not a BIGINT: " + token);
  }

  /** The current value as a BOOLEAN: true or false, null for JSON null, else a failure. */
  private static Boolean booleanValue(JsonParser parser) throws IOException {
    JsonToken token = valueToken(parser);
    if (token == null || token == JsonToken.VALUE_NULL) {
      return null;
    }
    if (token == JsonToken.VALUE_TRUE || token == JsonToken.VALUE_FALSE) {
      return token == JsonToken.VALUE_TRUE;
    }
    throw new IOException("not a BOOLEAN: " + token);
  }

  /** The current value as a STRING: a string's text, any other value's JSON text. */
  private static String stringValue(JsonFactory factory, JsonParser parser) throws IOException {
    JsonToken token = valueToken(parser);
    if (token == null || token == JsonToken.VALUE_NULL) {
      return null;
    }
    if (token == JsonToken.VALUE_STRING) {
      return parser.getText();
    }
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    try (JsonGenerator generator = factory.createGenerator(text, JsonEncoding.UTF8)) {
      generator.copyCurrentStructure(parser);
    }
    return text.toString(StandardCharsets.UTF_8);
  }

  private static JsonToken valueToken(JsonParser parser) throws IOException {
    JsonToken token = parser.currentToken();
    return token == JsonToken.FIELD_NAME ? parser.nextToken() : token;
  }
}
