package fusion.counter;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A key's state in the counter ({@code fusion/counter/decisions.py}'s {@code KeyState}): the
 * newest ack of each source seen, sorted by source name, and when it started, fired or expired.
 */
public record KeyState(
    TreeMap<String, Seen> seen,
    String firstAckAt,
    long startedMs,
    String firedAt,
    String expiredAt,
    Long deadlineMs) {
  boolean fired() {
    return firedAt != null;
  }

  /** Of {@code sources}, those without a document now (never acked, or deleted), sorted. */
  List<String> missing(Set<String> sources) {
    List<String> out = new ArrayList<>(new TreeSet<>(sources));
    out.removeAll(present());
    return out;
  }

  /** The sources whose document is there (acked, and not deleted since), sorted. */
  List<String> present() {
    List<String> out = new ArrayList<>();
    seen.forEach((name, s) -> {
      if (!s.deleted()) {
        out.add(name);
      }
    });
    return out;
  }

  /**
   * Whether any of the key's own rows is there ({@code decisions._has_part}): a dimension's row is
   * no part of a key by itself.
   */
  boolean hasPart(Rules rules) {
    for (String name : present()) {
      if (!rules.isSlot(name)) {
        return true;
      }
    }
    return false;
  }

  /** The sources whose document was deleted (and not written again since), sorted. */
  List<String> deleted() {
    List<String> out = new ArrayList<>();
    seen.forEach((name, s) -> {
      if (s.deleted()) {
        out.add(name);
      }
    });
    return out;
  }

  /** Each dimension slot the key has ({@code KeyState.refs}): the row it names. */
  TreeMap<String, Seen> refs(Rules rules) {
    TreeMap<String, Seen> out = new TreeMap<>();
    seen.forEach((name, s) -> {
      if (rules.isSlot(name)) {
        out.put(name, s);
      }
    });
    return out;
  }

  TreeMap<String, Long> versions() {
    TreeMap<String, Long> out = new TreeMap<>();
    seen.forEach((name, s) -> out.put(name, s.version()));
    return out;
  }

  KeyState with(TreeMap<String, Seen> seen, String firstAckAt) {
    return new KeyState(seen, firstAckAt, startedMs, firedAt, expiredAt, deadlineMs);
  }

  /** Fired no more: its enriched document went with its deleted sources. */
  KeyState unfired() {
    return new KeyState(seen, firstAckAt, startedMs, null, null, null);
  }

  KeyState firedAt(String iso) {
    return new KeyState(seen, firstAckAt, startedMs, iso, expiredAt, null);
  }

  KeyState expiredAt(String iso) {
    return new KeyState(seen, firstAckAt, startedMs, firedAt, iso, deadlineMs);
  }

  KeyState deadline(Long ms) {
    return new KeyState(seen, firstAckAt, startedMs, firedAt, expiredAt, ms);
  }

  /**
   * Whether a newer ack changes the key ({@code decisions._is_change}): not when it repeats what
   * the key had (the same digest, or a delete of a row already gone).
   */
  static boolean isChange(Seen before, Decisions.Ack ack) {
    if (ack.deleted()) {
      return before != null && !before.deleted();
    }
    boolean same =
        before != null && !before.deleted() && Objects.equals(ack.digest(), before.digest());
    return ack.digest() == null || !same;
  }

  /**
   * The newest ack of one source: its document's version, content digest and ack time, and
   * whether it said the source's row was deleted; a dimension's slot also the id its referrer
   * names, that row's version and how often the slot changed ({@code key_state.Seen}).
   */
  public record Seen(
      long version,
      String digest,
      String ackedAt,
      boolean deleted,
      long refVersion,
      String ref,
      long changes,
      List<Long> via) {
    Seen(long version, String digest, String ackedAt, boolean deleted) {
      this(version, digest, ackedAt, deleted, 0, null, 0, List.of());
    }

    /** A children slot after one more change ({@code decisions._child_seen}): never deleted. */
    static Seen childChanged(Seen before, long version, String ackedAt) {
      long newest = before == null ? version : Math.max(before.version(), version);
      long changes = (before == null ? 0 : before.changes()) + 1;
      return new Seen(newest, null, ackedAt, false, 0, null, changes, List.of());
    }

    /** Whether it is a slot's entry, which keeps its slot fields. */
    boolean slot() {
      return refVersion != 0 || ref != null || changes != 0 || !via.isEmpty();
    }

    /** Acks are ordered by the referrer's version, then a chain's rows between, then the row's. */
    int compareOrder(long otherVersion, List<Long> otherVia, long otherRefVersion) {
      int first = Long.compare(version, otherVersion);
      if (first != 0) {
        return first;
      }
      int between = compareVersions(via, otherVia);
      return between != 0 ? between : Long.compare(refVersion, otherRefVersion);
    }

    /** Python's comparison of tuples: element by element, a prefix before what extends it. */
    static int compareVersions(List<Long> a, List<Long> b) {
      for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
        int c = Long.compare(a.get(i), b.get(i));
        if (c != 0) {
          return c;
        }
      }
      return Integer.compare(a.size(), b.size());
    }
  }
}
