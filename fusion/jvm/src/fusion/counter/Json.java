package fusion.counter;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import fusion.counter.Decisions.Ack;
import fusion.counter.Decisions.Decision;
import fusion.counter.Decisions.Event;
import fusion.counter.Decisions.Now;
import fusion.counter.Decisions.Rejected;
import fusion.counter.KeyState.Seen;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The counter's JSON: the events it publishes (the same bytes as {@code fusion.events}'s
 * pydantic models), the {@code seen} column of its state (as {@code KeyState.to_row} writes
 * it), its rules, and a decide call for the differential test.
 */
public final class Json {
  private Json() {}

  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** The rules as {@code fusion.counter.query.rules_json} writes them. */
  public static Rules rules(String json) {
    JsonNode node = read(json);
    Map<String, Long> timeouts = new HashMap<>();
    node.get("timeouts_ms")
        .properties()
        .forEach(e -> timeouts.put(e.getKey(), e.getValue().isNull() ? null : e.getValue().asLong()));
    return new Rules(
        strings(node.get("sources")),
        strings(node.get("required")),
        timeouts,
        "reenrich".equals(node.get("on_update").asText()),
        node.hasNonNull("state_ttl_ms") ? node.get("state_ttl_ms").asLong() : null,
        "delete".equals(node.path("on_delete").asText("reenrich")),
        node.has("dimensions") ? strings(node.get("dimensions")) : Set.of(),
        node.has("children") ? strings(node.get("children")) : Set.of());
  }

  /** The {@code seen} column: {@code {"source":[version,digest,acked_at],...}}, sorted. */
  public static String seen(TreeMap<String, Seen> seen) {
    ObjectNode out = MAPPER.createObjectNode();
    seen.forEach(
        (name, s) -> {
          ArrayNode row = out.putArray(name).add(s.version()).add(s.digest()).add(s.ackedAt());
          if (s.slot()) {
            row.add(s.deleted()).add(s.refVersion()).add(s.ref()).add(s.changes());
            if (!s.via().isEmpty()) {
              ArrayNode via = row.addArray();
              s.via().forEach(via::add);
            }
          } else if (s.deleted()) {
            row.add(true);
          }
        });
    return write(out);
  }

  public static TreeMap<String, Seen> seen(String json) {
    TreeMap<String, Seen> out = new TreeMap<>();
    read(json)
        .properties()
        .forEach(
            e -> {
              JsonNode v = e.getValue();
              boolean slot = v.size() > 6;
              out.put(
                  e.getKey(),
                  new Seen(
                      v.get(0).asLong(),
                      text(v.get(1)),
                      text(v.get(2)),
                      v.size() > 3 && v.get(3).asBoolean(),
                      slot ? v.get(4).asLong() : 0,
                      slot ? text(v.get(5)) : null,
                      slot ? v.get(6).asLong() : 0,
                      v.size() > 7 ? longs(v.get(7)) : List.of()));
            });
    return out;
  }

  /** A ready/updated event as {@code ReadyEvent}, an incomplete one as {@code IncompleteEvent}. */
  public static String event(Event event) {
    ObjectNode out = MAPPER.createObjectNode().put("key", event.key());
    if (event.missing() == null) {
      array(out.putArray("sources"), event.sources());
      out.put("first_ack_at", event.firstAckAt()).put("fired_at", event.at());
      out.put("kind", event.kind());
    } else {
      array(out.putArray("present"), event.sources());
      array(out.putArray("missing"), event.missing());
      out.put("first_ack_at", event.firstAckAt()).put("expired_at", event.at());
    }
    ObjectNode versions = out.putObject("versions");
    event.versions().forEach(versions::put);
    if (event.missing() != null) {
      out.put("reason", event.reason());
    } else {
      array(out.putArray("deleted"), event.deleted());
    }
    ObjectNode refs = out.putObject("refs");
    event.refs().forEach(
        (name, s) -> {
          ObjectNode ref = refs.putObject(name).put("id", s.ref()).put("version", s.refVersion())
              .put("changes", s.changes());
          s.via().forEach(ref.putArray("via")::add);
        });
    return write(out);
  }

  /**
   * One decision, JSON in and out, for {@code tests/unit/counter/test_counter_jvm.py}: the request
   * names the {@code op} ({@code decide}, {@code deadline} or {@code restore}: the timer of a
   * rebuilt state), the key, its state row, the
   * acks, the rules and the batch time; the answer holds the decision's fields.
   */
  public static String decide(String request) {
    JsonNode in = read(request);
    String key = in.get("key").asText();
    KeyState state = in.get("state").isNull() ? null : state(in.get("state"));
    Rules rules = rules(write(in.get("rules")));
    Now now = Now.of(in.get("now_ms").asLong());
    Decision decision;
    if ("deadline".equals(in.get("op").asText())) {
      decision = Decisions.onDeadline(key, state, rules, now);
    } else if ("restore".equals(in.get("op").asText())) {
      Long timer = Decisions.restoredTimer(state, rules, now);
      decision = new Decision(state, List.of(), List.of(), false, timer, null);
    } else {
      List<Ack> acks = new ArrayList<>();
      for (JsonNode a : in.get("acks")) {
        acks.add(
            new Ack(
                text(a.get("source")),
                text(a.get("acked_at")),
                text(a.get("raw")),
                a.get("topic").asText(),
                a.get("partition").asInt(),
                a.get("offset").asLong(),
                a.get("version").isNull() ? null : a.get("version").asLong(),
                text(a.get("digest")),
                a.path("deleted").asBoolean(false),
                text(a.get("ref")),
                a.path("ref_version").asLong(0),
                parseVia(text(a.get("via")))));
      }
      decision = Decisions.decide(key, state, acks, rules, now);
    }
    ObjectNode out = MAPPER.createObjectNode();
    if (decision.state() == null) {
      out.putNull("state");
    } else {
      out.set("state", stateNode(decision.state()));
    }
    ArrayNode events = out.putArray("events");
    decision.events().forEach(e -> events.add(event(e)));
    ArrayNode rejected = out.putArray("rejected");
    for (Rejected r : decision.rejected()) {
      rejected.addArray().add(r.ack().raw()).add(r.reason());
    }
    out.put("new_key", decision.newKey());
    out.put("register_timer", decision.registerTimer());
    out.put("delete_timer", decision.deleteTimer());
    return write(out);
  }

  private static KeyState state(JsonNode row) {
    return new KeyState(
        seen(row.get("seen").asText()),
        row.get("first_ack_at").asText(),
        row.get("started_ms").asLong(),
        text(row.get("fired_at")),
        text(row.get("expired_at")),
        row.get("deadline_ms").isNull() ? null : row.get("deadline_ms").asLong());
  }

  private static ObjectNode stateNode(KeyState state) {
    ObjectNode out = MAPPER.createObjectNode();
    out.put("seen", seen(state.seen()));
    out.put("first_ack_at", state.firstAckAt());
    out.put("started_ms", state.startedMs());
    out.put("fired_at", state.firedAt());
    out.put("expired_at", state.expiredAt());
    out.put("deadline_ms", state.deadlineMs());
    return out;
  }

  private static Set<String> strings(JsonNode array) {
    Set<String> out = new HashSet<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  private static void array(ArrayNode node, List<String> values) {
    values.forEach(node::add);
  }

  private static String text(JsonNode node) {
    return node == null || node.isNull() ? null : node.asText();
  }

  private static List<Long> longs(JsonNode array) {
    List<Long> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asLong()));
    return List.copyOf(out);
  }

  /**
   * An ack's {@code via} as the counter reads it (its JSON text): the versions of a chain's rows
   * between, or null when it is no list of whole non-negative numbers ({@code rules.parse_via}).
   */
  static List<Long> parseVia(String text) {
    if (text == null) {
      return List.of();
    }
    JsonNode node;
    try {
      node = MAPPER.reader().with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS).readTree(text);
    } catch (JsonProcessingException e) {
      return null;
    }
    if (node == null || !node.isArray()) {
      return null;
    }
    List<Long> out = new ArrayList<>();
    for (JsonNode n : node) {
      if (!n.isIntegralNumber() || !n.canConvertToLong() || n.asLong() < 0) {
        return null;
      }
      out.add(n.asLong());
    }
    return List.copyOf(out);
  }

  private static JsonNode read(String json) {
    try {
      return MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage(), e);
    }
  }

  private static String write(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Python's {@code repr} of a string, for reasons worded as the Python counter words them. */
  static String pyRepr(String value) {
    char quote = value.contains("'") && !value.contains("\"") ? '"' : '\'';
    StringBuilder out = new StringBuilder().append(quote);
    for (char c : value.toCharArray()) {
      if (c == '\\' || c == quote) {
        out.append('\\').append(c);
      } else if (c == '\n') {
        out.append("\\n");
      } else if (c == '\r') {
        out.append("\\r");
      } else if (c == '\t') {
        out.append("\\t");
      } else {
        out.append(c);
      }
    }
    return out.append(quote).toString();
  }
}
