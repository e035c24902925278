package fusion.counter;

import fusion.counter.KeyState.Seen;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The counter's decisions, as pure functions: which sources of a key are searchable, and fire?
 *
 * <p>This is the JVM twin of {@code fusion/counter/decisions.py}, which stays the specification: the
 * unit test {@code tests/unit/counter/test_counter_jvm.py} runs both over the same random histories
 * and requires the same decisions. The counter runs this one because a Python state call
 * costs a socket round trip per key and batch, which capped the counter at about 1,150
 * acks/s on two cores.
 */
public final class Decisions {
  private Decisions() {}

  static final long NEVER = 1L << 62;
  private static final DateTimeFormatter ISO =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'").withZone(ZoneOffset.UTC);

  /** The processing time of the batch: ISO-8601 for events, milliseconds for timers. */
  public record Now(String iso, long ms) {
    public static Now of(long ms) {
      return new Now(ISO.format(Instant.ofEpochMilli(ms)), ms);
    }
  }

  /** The part of an ack the counter needs, plus where it came from for the dead-letter topic. */
  public record Ack(
      String source, String ackedAt, String raw, String topic, int partition, long offset,
      Long version,
      String digest,
      boolean deleted,
      String ref,
      long refVersion,
      List<Long> via) {} // null: not a list of versions (a malformed ack)

  /**
   * A {@code ready}, {@code updated} or {@code incomplete} event; {@code sources} are the
   * sources present, {@code missing} is null unless incomplete, {@code at} is when it fired
   * or expired, {@code reason} why it is incomplete ({@code timeout} or {@code state_ttl}).
   */
  public record Event(
      String kind,
      String key,
      List<String> sources,
      List<String> missing,
      String firstAckAt,
      String at,
      Map<String, Long> versions,
      String reason,
      List<String> deleted,
      Map<String, Seen> refs) {}

  public record Rejected(Ack ack, String reason) {}

  public record Decision(
      KeyState state,
      List<Event> events,
      List<Rejected> rejected,
      boolean newKey,
      Long registerTimer,
      Long deleteTimer) {
    static Decision of(KeyState state) {
      return new Decision(state, List.of(), List.of(), false, null, null);
    }

    Decision withRejected(List<Rejected> rejected, boolean newKey) {
      return new Decision(state, events, rejected, newKey, registerTimer, deleteTimer);
    }
  }

  /** Fold {@code acks} (any order, duplicates allowed) into the key's {@code state}. */
  public static Decision decide(
      String key, KeyState state, Iterable<Ack> acks, Rules rules, Now now) {
    TreeMap<String, Seen> seen = state == null ? new TreeMap<>() : new TreeMap<>(state.seen());
    String first = state == null ? null : state.firstAckAt();
    TreeSet<String> changed = new TreeSet<>();
    List<Rejected> rejected = new ArrayList<>();
    boolean asked = false; // fusion reconcile asks for the key's enrichment again
    for (Ack ack : acks) {
      if (key.isEmpty() || ack.source() == null || ack.ackedAt() == null) {
        rejected.add(new Rejected(ack, "malformed ack: key, source and acked_at are required"));
        continue;
      }
      if (Rules.REENRICH.equals(ack.source())) {
        asked = true;
        continue;
      }
      if (!rules.sources().contains(ack.source())) {
        String reason =
            "ack for unknown source " + Json.pyRepr(ack.source()) + " (not in the pipeline config)";
        rejected.add(new Rejected(ack, reason));
        continue;
      }
      if (ack.via() == null) {
        rejected.add(new Rejected(ack, "malformed ack: via must be a list of versions"));
        continue;
      }
      first = first == null || ack.ackedAt().compareTo(first) < 0 ? ack.ackedAt() : first;
      Seen before = seen.get(ack.source());
      long version = ack.version() == null ? 0 : ack.version();
      if (rules.children().contains(ack.source())) {
        // Each is a change to the key's children, published once ({@code decisions._child_seen}).
        changed.add(ack.source());
        seen.put(ack.source(), Seen.childChanged(before, version, ack.ackedAt()));
        continue;
      }
      if (before != null && before.compareOrder(version, ack.via(), ack.refVersion()) >= 0) {
        continue; // a duplicate, or older than what the key has: changes nothing
      }
      boolean change = KeyState.isChange(before, ack);
      if (change) {
        changed.add(ack.source());
      }
      long changes = before == null ? 0 : before.changes();
      if (change && rules.dimensions().contains(ack.source())) {
        changes++;
      }
      String digest = ack.deleted() ? null : ack.digest();
      seen.put(
          ack.source(),
          new Seen(version, digest, ack.ackedAt(), ack.deleted(), ack.refVersion(), ack.ref(),
              changes, ack.via()));
    }
    if (first == null) {
      return Decision.of(state).withRejected(rejected, false);
    }
    KeyState after =
        state == null
            ? new KeyState(seen, first, now.ms(), null, null, null)
            : state.with(seen, first);
    if (!after.fired()) {
      return fireOrWait(key, after, rules, now).withRejected(rejected, state == null);
    }
    return afterFire(key, after, changed, asked, rules, now).withRejected(rejected, false);
  }

  /** A fired key's sources changed, or reconcile asked ({@code decisions._after_fire}). */
  private static Decision afterFire(
      String key, KeyState state, Set<String> changed, boolean asked, Rules rules, Now now) {
    if (changed.isEmpty() && !asked) {
      return Decision.of(state);
    }
    Set<String> gone = new TreeSet<>(changed);
    gone.retainAll(state.deleted());
    if (!gone.isEmpty() && (!state.hasPart(rules) || rules.deleteOnDelete())) {
      return new Decision(
          state.unfired(), List.of(ready(key, state, now, "deleted", rules)), List.of(), false, null, null);
    }
    if (!gone.isEmpty() || rules.reenrich() || changed.isEmpty()) {
      return new Decision(
          state, List.of(ready(key, state, now, "updated", rules)), List.of(), false, null, null);
    }
    return Decision.of(state);
  }

  /** The key's timer expired: fire it, report it incomplete, or wait for the next deadline. */
  public static Decision onDeadline(String key, KeyState state, Rules rules, Now now) {
    if (state == null) {
      // Fired and expired keys leave no timer behind: this key went from the state
      // unreported (stopped past the TTL's margin). Reported, though nothing is known of it.
      List<String> missing = new ArrayList<>(new TreeSet<>(rules.waited()));
      Event event =
          new Event(
              "incomplete", key, List.of(), missing, null, now.iso(), Map.of(), "state_ttl", null,
              Map.of());
      return new Decision(null, List.of(event), List.of(), false, null, null);
    }
    if (state.fired() || state.expiredAt() != null) {
      return Decision.of(state); // a timer left from before the key fired or expired
    }
    state = state.deadline(null);
    if (!state.hasPart(rules)) {
      return Decision.of(state); // every row it had was deleted: nothing to fire or report
    }
    if (complete(state, rules, now)) {
      return fire(key, state, rules, now);
    }
    List<String> missing = state.missing(rules.waited()); // children are never missed
    boolean overdue = false;
    boolean timedOut = false;
    for (String source : missing) {
      if (rules.required().contains(source) && rules.due(state, source) <= now.ms()) {
        overdue = true;
        timedOut |= rules.timeoutsMs().get(source) != null;
      }
    }
    if (overdue) {
      KeyState expired = state.expiredAt(now.iso());
      Event event =
          new Event(
              "incomplete",
              key,
              state.present(),
              missing,
              state.firstAckAt(),
              now.iso(),
              state.versions(),
              timedOut ? "timeout" : "state_ttl",
              null,
              state.refs(rules));
      return new Decision(expired, List.of(event), List.of(), false, null, null);
    }
    return await(state, rules, now);
  }

  /**
   * The timer a key's rebuilt state registers ({@code decisions.restored_timer}): one already due
   * for a complete key never fired or reported, its next deadline for a waiting one, else none.
   */
  public static Long restoredTimer(KeyState state, Rules rules, Now now) {
    if (state.fired() || state.expiredAt() != null) {
      return null;
    }
    if (complete(state, rules, now)) {
      return now.ms() - 1;
    }
    return await(state, rules, now).registerTimer();
  }

  /** Every required source is there and no optional one is still worth waiting for. */
  static boolean complete(KeyState state, Rules rules, Now now) {
    if (!state.hasPart(rules)) {
      return false; // a key without any row (each one it had was deleted)
    }
    for (String source : state.missing(rules.sources())) {
      if (rules.required().contains(source)) {
        return false;
      }
      // An optional source is waited for until its own timeout (not at all without one).
      long due = rules.due(state, source);
      if (now.ms() < due && due < NEVER) {
        return false;
      }
    }
    return true;
  }

  private static Decision fireOrWait(String key, KeyState state, Rules rules, Now now) {
    if (complete(state, rules, now)) {
      return fire(key, state, rules, now);
    }
    if (state.deadlineMs() == null && state.expiredAt() == null) {
      return await(state, rules, now);
    }
    return Decision.of(state);
  }

  private static Decision fire(String key, KeyState state, Rules rules, Now now) {
    KeyState fired = state.firedAt(now.iso());
    return new Decision(
        fired, List.of(ready(key, fired, now, "ready", rules)), List.of(), false, null, state.deadlineMs());
  }

  /** Register a timer at the earliest deadline still ahead, if there is one. */
  private static Decision await(KeyState state, Rules rules, Now now) {
    if (!state.hasPart(rules)) {
      return Decision.of(state); // no row left to wait with: a row written again starts it
    }
    long at = NEVER;
    for (String source : state.missing(rules.sources())) {
      long due = rules.due(state, source);
      if (now.ms() < due && due < NEVER) {
        at = Math.min(at, due);
      }
    }
    if (at == NEVER) {
      return Decision.of(state);
    }
    return new Decision(state.deadline(at), List.of(), List.of(), false, at, null);
  }

  private static Event ready(String key, KeyState state, Now now, String kind, Rules rules) {
    return new Event(
        kind,
        key,
        state.present(),
        null,
        state.firstAckAt(),
        now.iso(),
        state.versions(),
        null,
        state.deleted(),
        state.refs(rules));
  }
}
