// A check binary whose checks misbehave on purpose, to test checker/mpi_launch.py: a rank
// that crashes, a rank that hangs, and ordinary checks before and after them.
#include <gtest/gtest.h>

#include <csignal>
#include <thread>

#include "comm/check.h"

using comm::check::world;

TEST(Launcher, PassesFirst) { EXPECT_EQ(world().size() > 0, true); }

TEST(Launcher, LastRankCrashes) {
  world().barrier();
  if (world().rank() == world().size() - 1) std::raise(SIGSEGV);
  world().barrier();
}

TEST(Launcher, RankZeroHangsInRecv) {
  int v = 0;
  if (world().rank() == 0) world().recv(&v, sizeof v, world().size() - 1, 77);  // never sent
  world().barrier();
}

TEST(Launcher, ThrowsOnRankZero) {
  comm::check::guarded([] {
    if (world().rank() == 0) throw std::runtime_error("deliberate failure on rank 0");
  });
  world().barrier();
}

// Rank 0 computes (sleeps) for 3 s while the others wait in a barrier: slow, not a deadlock.
TEST(Launcher, SlowRankIsNotADeadlock) {
  if (world().rank() == 0) std::this_thread::sleep_for(std::chrono::seconds(3));
  world().barrier();
}

TEST(Launcher, FailsCleanly) { EXPECT_TRUE(comm::check::agree_all(false)) << "deliberate failure"; }

TEST(Launcher, PassesLast) { world().barrier(); }
