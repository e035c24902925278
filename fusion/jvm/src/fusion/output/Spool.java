package fusion.output;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * A task's output records until its transaction commits: the first {@code budget} bytes in
 * memory, the rest in a local file.
 *
 * <p>The writer must be able to send them again (a transaction that failed is retried from its
 * first record), so it cannot send them as they come; and a task's output (enriched documents
 * joining N source records each) can be far larger than an executor's memory. Iterating reads
 * the file from its start each time; {@link #close} deletes it.
 */
public final class Spool implements Iterable<ProducerRecord<byte[], byte[]>>, AutoCloseable {
  private final long budget;
  private final List<ProducerRecord<byte[], byte[]>> held = new ArrayList<>();
  private long heldBytes;
  private Path file;
  private DataOutputStream out;
  private int spilled;
  private final List<DataInputStream> reading = new ArrayList<>();

  public Spool(long budget) {
    this.budget = budget;
  }

  /** Add a record (a null key or value stays null). */
  public void add(String topic, byte[] key, byte[] value) {
    long size = topic.length() + length(key) + length(value);
    if (file == null && heldBytes + size <= budget) {
      held.add(new ProducerRecord<>(topic, key, value));
      heldBytes += size;
      return;
    }
    try {
      if (file == null) {
        file = Files.createTempFile("fusion-spool-", ".bin");
        out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file), 1 << 16));
      }
      out.writeUTF(topic);
      writeBytes(out, key);
      writeBytes(out, value);
      spilled++;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot spill a task's output to " + file, e);
    }
  }

  /** Records held in memory and spilled to the file. */
  public int size() {
    return held.size() + spilled;
  }

  /** Records in the file (0: everything fitted the budget). */
  public int spilled() {
    return spilled;
  }

  /** The bytes held in memory (topics, keys and values). */
  public long heldBytes() {
    return heldBytes;
  }

  /** The spill file, or null: for tests that check it is gone after {@link #close}. */
  public String file() {
    return file == null ? null : file.toString();
  }

  @Override
  public Iterator<ProducerRecord<byte[], byte[]>> iterator() {
    if (file == null) {
      return held.iterator();
    }
    try {
      out.flush();
      DataInputStream in =
          new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 16));
      reading.add(in); // a transaction that fails leaves its pass unfinished: close() ends it
      return new Replay(held.iterator(), in, spilled);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read a task's spilled output from " + file, e);
    }
  }

  @Override
  public void close() {
    held.clear();
    if (file == null) {
      return;
    }
    try {
      for (DataInputStream in : reading) {
        in.close();
      }
      out.close();
      Files.deleteIfExists(file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete " + file, e);
    }
  }

  private static long length(byte[] bytes) {
    return bytes == null ? 0 : bytes.length;
  }

  private static void writeBytes(DataOutputStream out, byte[] bytes) throws IOException {
    out.writeInt(bytes == null ? -1 : bytes.length);
    if (bytes != null) {
      out.write(bytes);
    }
  }

  private static byte[] readBytes(DataInputStream in) throws IOException {
    int length = in.readInt();
    if (length < 0) {
      return null;
    }
    byte[] bytes = new byte[length];
    in.readFully(bytes);
    return bytes;
  }

  /** The held records, then the file's, read one at a time; the file closes at its end. */
  private static final class Replay implements Iterator<ProducerRecord<byte[], byte[]>> {
    private final Iterator<ProducerRecord<byte[], byte[]>> held;
    private final DataInputStream in;
    private int left;

    Replay(Iterator<ProducerRecord<byte[], byte[]>> held, DataInputStream in, int spilled) {
      this.held = held;
      this.in = in;
      this.left = spilled;
    }

    @Override
    public boolean hasNext() {
      if (held.hasNext()) {
        return true;
      }
      if (left == 0) {
        closeQuietly();
      }
      return left > 0;
    }

    @Override
    public ProducerRecord<byte[], byte[]> next() {
      if (held.hasNext()) {
        return held.next();
      }
      if (left == 0) {
        throw new NoSuchElementException();
      }
      try {
        String topic = in.readUTF();
        byte[] key = readBytes(in);
        byte[] value = readBytes(in);
        left--;
        return new ProducerRecord<>(topic, key, value);
      } catch (EOFException e) {
        throw new IllegalStateException("a task's spill file ended early", e);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read a task's spilled output", e);
      }
    }

    private void closeQuietly() {
      try {
        in.close();
      } catch (IOException ignored) {
        // read to its end: nothing is lost by a failed close
      }
    }
  }
}
