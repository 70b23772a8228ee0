// The order in which cusim starts a launch's blocks, for checks of determinism.
#pragma once

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

}  // namespace wb::check
