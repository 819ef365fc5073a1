// Copyright 2026 The stoker Authors.
#include "base/process.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

namespace stoker {
namespace {

// Issue 32 item 40: ranks pinned by their launcher keep their whole mask.
TEST(RankShareOfCoresTest, DividesASharedMaskAndKeepsAPinnedOne) {
  // One rank per machine: everything.
  EXPECT_EQ(RankShareOfCores(16, 16, 1), 16);
  // Two ranks under one mask as wide as the launcher's: half each.
  EXPECT_EQ(RankShareOfCores(16, 16, 2), 8);
  EXPECT_EQ(RankShareOfCores(16, 16, 3), 5);
  // The launcher pinned each rank to 8 of its 16 cores: the 8 are this rank's own.
  EXPECT_EQ(RankShareOfCores(8, 16, 2), 8);
  // The parent's mask unknown (0): divide, as before.
  EXPECT_EQ(RankShareOfCores(8, 0, 2), 4);
  // Never below one thread.
  EXPECT_EQ(RankShareOfCores(2, 2, 8), 1);
  EXPECT_EQ(RankShareOfCores(0, 0, 1), 1);
}

// CoresOf reads another process's mask: a child that narrows its own mask sees
// its parent's wider one, and DefaultRankCores then keeps the child's whole mask.
TEST(RankShareOfCoresTest, ANarrowedChildSeesItsParentsWiderMask) {
  const int parent = AvailableCores();
  if (parent < 2) GTEST_SKIP() << "needs 2 cores to narrow the mask";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof(mine), &mine) != 0) ::_exit(2);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &mine)) {
        CPU_SET(c, &one);
        break;
      }
    }
    if (sched_setaffinity(0, sizeof(one), &one) != 0) ::_exit(3);
    if (AvailableCores() != 1) ::_exit(4);
    if (CoresOf(getppid()) != parent) ::_exit(5);
    // Pinned by its "launcher": the one core is this rank's, not half of it.
    if (DefaultRankCores(parent) != 1) ::_exit(6);
    if (RankShareOfCores(1, CoresOf(getppid()), 2) != 1) ::_exit(7);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace stoker
