package fusion.output;

import java.io.IOException;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Fault injection for the tests, the JVM twin of {@code fusion/core/faults.py}: the same
 * settings ({@code FUSION_CRASH_AT}, {@code FUSION_HOLD_AT}, {@code FUSION_FAULT_DIR}), the same
 * pass counting, so a point fires once per test run however many processes pass it.
 *
 * <p>The settings come from the driver with each micro-batch (a Python worker reads them from its
 * environment; a JVM task cannot see the environment a test gives the workers). A crash inside a
 * task throws {@link Crash}, which fails the task the way a killed Python worker does; with
 * {@code :jvm} the whole JVM halts, as {@code kill -9} would end it.
 */
final class Faults implements Serializable {
  private static final long serialVersionUID = 1L;
  static final String CRASH = "FUSION_CRASH_AT";
  static final String HOLD = "FUSION_HOLD_AT";
  static final String DIR = "FUSION_FAULT_DIR";
  private static final long HOLD_LIMIT_MS = 600_000;
  private static final Map<String, Integer> PASSES = new ConcurrentHashMap<>();
  private static final Object COUNTING = new Object();

  private final Map<String, String> settings;

  Faults(Map<String, String> settings) {
    this.settings = settings;
  }

  /** A simulated crash of the task at a named point. */
  static final class Crash extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Crash(String point) {
      super("fault injection: crashed at " + point);
    }
  }

  /** Crash or hold here if the settings name {@code name}. */
  void point(String name) {
    String hold = settings.get(HOLD);
    if (hold != null && !hold.isEmpty()) {
      hold(name, hold);
    }
    String wanted = settings.get(CRASH);
    if (wanted == null || wanted.isEmpty()) {
      return;
    }
    for (String spec : wanted.split(",")) {
      String target = spec.strip();
      String killWhat = "";
      int colon = target.indexOf(':');
      if (colon >= 0) {
        killWhat = target.substring(colon + 1);
        target = target.substring(0, colon);
      }
      int nth = 1;
      int at = target.indexOf('@');
      if (at >= 0) {
        nth = Integer.parseInt(target.substring(at + 1));
        target = target.substring(0, at);
      }
      if (target.equals(name) && countPass(name) == nth) {
        recordHit(name);
        if ("jvm".equals(killWhat)) {
          Runtime.getRuntime().halt(137);
        }
        throw new Crash(name);
      }
    }
  }

  private int countPass(String name) {
    String dir = settings.get(DIR);
    if (dir == null || dir.isEmpty()) {
      return PASSES.merge(name, 1, Integer::sum);
    }
    // One byte appended per pass; the pass number is the file's size right after this
    // pass's byte, read under a lock: an append channel's position() is the file's size at
    // the time of the call, so two tasks passing together both read 2 and neither fires the
    // first pass (faults.py reads its own descriptor's offset instead). The file lock keeps
    // other processes out, the monitor other threads of this JVM (which a file lock does not).
    Path file = Path.of(dir, name + ".passes");
    synchronized (COUNTING) {
      try (FileChannel channel =
              FileChannel.open(
                  file,
                  StandardOpenOption.CREATE,
                  StandardOpenOption.WRITE,
                  StandardOpenOption.APPEND);
          FileLock lock = channel.lock()) {
        channel.write(ByteBuffer.wrap(new byte[] {'.'}));
        return (int) channel.size();
      } catch (IOException e) {
        throw new IllegalStateException("fault injection: cannot count passes in " + file, e);
      }
    }
  }

  private void recordHit(String name) {
    String dir = settings.get(DIR);
    if (dir != null && !dir.isEmpty()) {
      try {
        Files.writeString(Path.of(dir, name + ".hit"), "");
      } catch (IOException e) {
        throw new IllegalStateException("fault injection: cannot record " + name, e);
      }
    }
  }

  private static void hold(String name, String spec) {
    for (String entry : spec.split(",")) {
      int eq = entry.indexOf('=');
      if (eq < 0 || !entry.substring(0, eq).strip().equals(name)) {
        continue;
      }
      Path gate = Path.of(entry.substring(eq + 1).strip());
      if (!Files.exists(gate)) {
        continue;
      }
      try {
        Files.writeString(Path.of(gate + ".reached"), "");
        long deadline = System.currentTimeMillis() + HOLD_LIMIT_MS;
        while (Files.exists(gate) && System.currentTimeMillis() < deadline) {
          Thread.sleep(50);
        }
      } catch (IOException e) {
        throw new IllegalStateException("fault injection: cannot hold at " + name, e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
