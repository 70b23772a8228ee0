/// @file
/// @brief Checks of determinism: the order in which cusim starts a launch's blocks, and one call
/// made three times on the same inputs whose outputs must agree bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wb_check.h"

#if defined(CUSIM)
#include <cusim/checker.h>
#endif

namespace wb::check {

/// While it lives, the blocks of every launch start in the order of a check's run @p run of the
/// same call (sim: run 1 in launch order, 2 in reverse, 3 even linear indices then odd ones, then
/// again; cusim::checker::set_block_order); launch order again after. Code whose result depends on
/// the order blocks finish in (a float atomicAdd of partial results) then gives a different result
/// in every run, not only when cusim's workers happen to race. On a GPU it does nothing: the
/// hardware's order varies by itself.
class BlockOrderOfRun {
 public:
  explicit BlockOrderOfRun(int run) {
#if defined(CUSIM)
    cusim::checker::set_block_order(static_cast<cusim::checker::BlockOrder>(((run - 1) % 3 + 3) % 3));
#else
    (void)run;
#endif
  }
  ~BlockOrderOfRun() {
#if defined(CUSIM)
    cusim::checker::set_block_order(cusim::checker::BlockOrder::launch);
#endif
  }
  BlockOrderOfRun(const BlockOrderOfRun&) = delete;
  BlockOrderOfRun& operator=(const BlockOrderOfRun&) = delete;
};

/// Three runs of @p call on the same inputs: @p run(got, k) makes run k (1, 2, 3) into a fresh
/// @p Got, with the blocks started in run k's order (BlockOrderOfRun; a run may vary more, such as
/// what a workspace holds before it). Each of @p outputs (its name, a member of Got) must come out
/// of runs 2 and 3 bitwise as from run 1; else "{call}: run {k} gave a different {name} from run 1
/// on the same inputs ({name}[i]: {run k's} vs {run 1's})." and @p advice. The first failing run's
/// own verdict comes first.
template <class Got, class Run>
testing::AssertionResult same_every_run(const std::string& call, Run&& run,
                                        std::initializer_list<std::pair<const char*, std::vector<float> Got::*>> outputs,
                                        std::string_view advice = {}) {
  Got first;
  if (auto r = run(first, 1); !r) return r;
  for (int k = 2; k <= 3; ++k) {
    Got again;
    {
      const BlockOrderOfRun order(k);
      if (auto r = run(again, k); !r) return r;
    }
    for (const auto& [name, member] : outputs) {
      const std::vector<float>& a = first.*member;
      const std::vector<float>& b = again.*member;
      std::size_t i = 0;
      while (i < a.size() && i < b.size() && std::memcmp(&a[i], &b[i], sizeof(float)) == 0) ++i;
      if (i == a.size() && i == b.size()) continue;
      testing::AssertionResult failure = testing::AssertionFailure();
      failure << call << ": run " << k << " gave a different " << name << " from run 1 on the same inputs (";
      if (i < a.size() && i < b.size()) {
        failure << name << "[" << i << "]: " << significant(b[i], 8) << " vs " << significant(a[i], 8) << ").";
      } else {
        failure << b.size() << " elements vs " << a.size() << ").";
      }
      if (!advice.empty()) failure << " " << advice;
      return failure;
    }
  }
  return testing::AssertionSuccess();
}

}  // namespace wb::check
