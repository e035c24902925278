package fusion.output;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/** Rounds in which threads passing one crash point together did not crash exactly once. */
public final class FaultsRace {
  public static void main(String[] args) throws Exception {
    int rounds = Integer.parseInt(args[0]);
    int threads = 8;
    int wrong = 0;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    for (int round = 0; round < rounds; round++) {
      Path dir = Files.createTempDirectory("fusion-faults-");
      Faults faults = new Faults(Map.of(Faults.CRASH, "p", Faults.DIR, dir.toString()));
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Boolean>> crashed = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        crashed.add(
            pool.submit(
                () -> {
                  go.await();
                  try {
                    faults.point("p");
                    return false;
                  } catch (Faults.Crash c) {
                    return true;
                  }
                }));
      }
      go.countDown();
      int count = 0;
      for (Future<Boolean> c : crashed) {
        count += c.get() ? 1 : 0;
      }
      wrong += count == 1 ? 0 : 1;
    }
    pool.shutdown();
    System.out.println(wrong);
  }
}
