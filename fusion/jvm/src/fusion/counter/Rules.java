package fusion.counter;

import java.io.Serializable;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/** What the counter needs from the pipeline config: the twin of {@code fusion/counter/rules.py}. */
public record Rules(
    Set<String> sources,
    Set<String> required,
    Map<String, Long> timeoutsMs,
    boolean reenrich,
    Long stateTtlMs,
    boolean deleteOnDelete,
    Set<String> dimensions,
    Set<String> children)
    implements Serializable {
  /** The source of an ack that asks a fired key's enrichment again ({@code rules.REENRICH}). */
  static final String REENRICH = "fusion";

  /** Whether the source is no part of a key by itself ({@code Rules.slots}). */
  boolean isSlot(String source) {
    return dimensions.contains(source) || children.contains(source);
  }

  /** The sources a key can be missing: all but its children ({@code decisions.on_deadline}). */
  Set<String> waited() {
    Set<String> out = new HashSet<>(sources);
    out.removeAll(children);
    return out;
  }

  long due(KeyState state, String source) {
    Long timeout = timeoutsMs.get(source);
    if (timeout != null) {
      return state.startedMs() + timeout;
    }
    if (stateTtlMs == null || !required.contains(source)) {
      return Decisions.NEVER;
    }
    long step = ttlStepMs(stateTtlMs);
    return Math.floorDiv(-(state.startedMs() + stateTtlMs), step) * -step;
  }

  private static final long DAY_MS = 86_400_000L;

  /** What a key's TTL deadline is rounded up to ({@code decisions.ttl_step_ms}). */
  static long ttlStepMs(long stateTtlMs) {
    return Math.max(1, Math.min(60_000, stateTtlMs / 100));
  }

  /** Spark's state TTL: {@code state_ttl} plus a margin ({@code decisions.retention_ms}). */
  public static long retentionMs(long stateTtlMs) {
    return stateTtlMs + Math.min(stateTtlMs, DAY_MS);
  }
}
