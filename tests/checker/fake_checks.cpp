// A check binary whose checks misbehave on purpose: the runner must turn each into a
// clear result, and keep going. Used by test_runner_isolation.py.
#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "wb_check.h"

TEST(Correctness, Passes) {
  wb::check::record_measured("42 things");
  // An undeclared check's recorded threshold is shown (a declared check shows its .passes).
  testing::Test::RecordProperty("threshold", ">= 42 things");
}

TEST(Correctness, FailsWithMessage) {
  wb::check::record_hint("a hint from the check");
  FAIL() << "y[3]: expected 1, got 2";
}

TEST(Correctness, Segfaults) {
  std::fprintf(stderr, "device report: invalid __global__ write of size 4 at kernel.cu:12\n");
  std::raise(SIGSEGV);
}

TEST(Correctness, Aborts) { std::abort(); }

TEST(Correctness, ExitsEarly) { std::exit(3); }

TEST(Correctness, Throws) { throw std::runtime_error("kernel.cu:7: cudaMalloc failed"); }

// Hangs, after starting a grandchild that would outlive a careless runner: the grandchild
// writes its pid where the test can check that it was killed with the group.
TEST(Correctness, HangsWithChild) {
  if (const char* pid_file = std::getenv("WB_FAKE_PID_FILE")) {
    if (fork() == 0) {
      std::ofstream(pid_file) << getpid() << "\n";
      for (;;) pause();
    }
  }
  for (;;) pause();
}

TEST(Correctness, FloodsOutput) {
  std::string line(1000, 'x');
  for (int i = 0; i < 50000; ++i) std::printf("%s\n", line.c_str());  // 50 MB
  FAIL() << "flooded";
}

TEST(Performance, NotMeasured) { WB_NOT_MEASURED("no metrics in this build"); }
