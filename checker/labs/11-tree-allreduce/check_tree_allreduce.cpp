// Checks of lab 11 (tree all-reduce). Run under mpirun with 1..8 ranks by
// `./workbook check 11`; every rank runs every check and all ranks agree on the verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "comm/check.h"
#include "comm/error.h"
#include "comm/harness.h"
#include "tree_allreduce.h"

namespace {

using comm::DataType;
using comm::RedOp;
using comm::check::agree_all;
using comm::check::gather_text;
using comm::check::record;
using comm::check::run_lab_code;
using comm::check::world;

// NCCL's tree layout, restated independently of the lab for comparison.
lab11::TreeLinks reference_tree(int n, int rank) {
  lab11::TreeLinks l;
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  if (rank == 0) {
    l.child1 = n > 1 ? bit >> 1 : -1;
    return l;
  }
  l.parent = ((rank ^ bit) | (bit << 1)) < n ? ((rank ^ bit) | (bit << 1)) : rank ^ bit;
  int low = bit >> 1;
  if (low) {
    l.child0 = rank - low;
    while (low && rank + low >= n) low >>= 1;
    l.child1 = low ? rank + low : -1;
  }
  return l;
}

lab11::TreeLinks reference_second(int n, int rank) {
  const bool shift = n % 2 == 1;
  auto t = reference_tree(n, shift ? (rank - 1 + n) % n : n - 1 - rank);
  auto map = [&](int q) { return q < 0 ? -1 : shift ? (q + 1) % n : n - 1 - q; };
  return {map(t.parent), map(t.child0), map(t.child1)};
}

std::string links_text(lab11::TreeLinks l) {
  std::ostringstream s;
  s << "{parent " << l.parent << ", child0 " << l.child0 << ", child1 " << l.child1 << "}";
  return s.str();
}

bool same(lab11::TreeLinks a, lab11::TreeLinks b) {
  return a.parent == b.parent && a.child0 == b.child0 && a.child1 == b.child1;
}

comm::AllreduceFn single(std::size_t seg) {
  return [seg](const void* s, void* r, std::size_t c, DataType t, RedOp op, comm::Communicator& w) {
    lab11::tree_allreduce(s, r, c, t, op, w, seg);
  };
}
comm::AllreduceFn dual(std::size_t seg) {
  return [seg](const void* s, void* r, std::size_t c, DataType t, RedOp op, comm::Communicator& w) {
    lab11::double_tree_allreduce(s, r, c, t, op, w, seg);
  };
}

void sweep(comm::AllreduceFn (*make)(std::size_t), DataType type, RedOp op) {
  std::size_t cases = 0;
  // Small segments for small counts, so every size of the sweep is pipelined.
  std::string failure = comm::check::sweep_allreduce(
      [make](std::size_t count, DataType t) { return make(count < 4096 ? 2 * comm::size_of(t) : 8192); }, type, op,
      &cases);
  record("threshold", "bit-exact on every rank");
  if (!failure.empty()) {
    record("measured", std::to_string(cases) + " cases passed before the failing one");
    FAIL() << failure;
  }
  record("measured", std::to_string(cases) + "/" + std::to_string(cases) + " cases bit-exact");
}

// Bytes sent by the busiest rank for one all-reduce of `count` floats.
std::uint64_t busiest_rank_bytes(const comm::AllreduceFn& fn, std::size_t count, std::string* ni) {
  comm::Communicator& w = world();
  comm::Buffer send = w.allocate(count * 4), recv = w.allocate(count * 4);
  comm::fill_bytes(send.data(), send.space(), 0, count * 4);
  w.reset_stats();
  *ni = run_lab_code([&] { fn(send.data(), recv.data(), count, DataType::f32, RedOp::sum, w); });
  double mine = static_cast<double>(w.stats().bytes_sent), most = 0;
  w.library_allreduce(&mine, &most, 1, DataType::f64, RedOp::max);
  return static_cast<std::uint64_t>(most);
}

}  // namespace

TEST(Correctness, BinaryTreeLayout) {
  std::string failure;
  std::string ni = run_lab_code([&] {
    for (int n = 1; n <= 16 && failure.empty(); ++n)
      for (int r = 0; r < n; ++r) {
        auto got = lab11::binary_tree(n, r), want = reference_tree(n, r);
        if (!same(got, want)) {
          failure = "binary_tree(n=" + std::to_string(n) + ", rank=" + std::to_string(r) + ") returned " +
                    links_text(got) + ", expected " + links_text(want) + " (see the layout in tree_allreduce.h)";
          break;
        }
      }
  });
  if (!ni.empty()) FAIL() << ni;
  EXPECT_TRUE(failure.empty()) << failure;
}

TEST(Correctness, SecondTreeLayout) {
  std::string failure;
  std::string ni = run_lab_code([&] {
    for (int n = 1; n <= 16 && failure.empty(); ++n)
      for (int r = 0; r < n; ++r) {
        auto got = lab11::second_tree(n, r), want = reference_second(n, r);
        if (!same(got, want)) {
          failure = "second_tree(n=" + std::to_string(n) + ", rank=" + std::to_string(r) + ") returned " +
                    links_text(got) + ", expected " + links_text(want) + " (" +
                    (n % 2 ? "odd n: shift by one rank" : "even n: mirror") + ")";
          break;
        }
      }
  });
  if (!ni.empty()) FAIL() << ni;
  EXPECT_TRUE(failure.empty()) << failure;
}

#define TREE_SWEEP(NAME, MAKE, TYPE, OP) \
  TEST(Correctness, NAME) { sweep(MAKE, TYPE, OP); }
TREE_SWEEP(TreeFloatSum, single, DataType::f32, RedOp::sum)
TREE_SWEEP(TreeFloatMax, single, DataType::f32, RedOp::max)
TREE_SWEEP(TreeDoubleSum, single, DataType::f64, RedOp::sum)
TREE_SWEEP(TreeDoubleMax, single, DataType::f64, RedOp::max)
TREE_SWEEP(TreeInt32Sum, single, DataType::i32, RedOp::sum)
TREE_SWEEP(TreeInt32Max, single, DataType::i32, RedOp::max)
TREE_SWEEP(DoubleTreeFloatSum, dual, DataType::f32, RedOp::sum)
TREE_SWEEP(DoubleTreeFloatMax, dual, DataType::f32, RedOp::max)
TREE_SWEEP(DoubleTreeDoubleSum, dual, DataType::f64, RedOp::sum)
TREE_SWEEP(DoubleTreeDoubleMax, dual, DataType::f64, RedOp::max)
TREE_SWEEP(DoubleTreeInt32Sum, dual, DataType::i32, RedOp::sum)
TREE_SWEEP(DoubleTreeInt32Max, dual, DataType::i32, RedOp::max)

TEST(Correctness, DoubleTree64MiB) {
  for (auto [type, op] : {std::pair{DataType::f32, RedOp::sum}, std::pair{DataType::i32, RedOp::max}}) {
    const std::size_t count = (std::size_t(64) << 20) / comm::size_of(type);
    std::string failure =
        comm::check::check_allreduce(dual(lab11::default_segment_bytes), count, type, op, false);
    ASSERT_TRUE(failure.empty()) << failure;
  }
  record("measured", "64 MiB bit-exact with " + std::to_string(world().size()) + " ranks");
}

TEST(Correctness, TreeIsPipelined) {
  comm::Communicator& w = world();
  const std::size_t count = 200003, seg = 16 * 1024;
  comm::Buffer send = w.allocate(count * 4), recv = w.allocate(count * 4);
  comm::fill_bytes(send.data(), send.space(), 0, count * 4);
  w.reset_stats();
  std::string ni = run_lab_code([&] {
    lab11::tree_allreduce(send.data(), recv.data(), count, DataType::f32, RedOp::sum, w, seg);
  });
  if (!ni.empty()) FAIL() << ni;
  const comm::Stats st = w.stats();
  const std::uint64_t segments = (count * 4 + seg - 1) / seg;
  std::ostringstream local;
  if (w.size() == 1) {
    if (st.sends) local << "with one rank nothing needs to be sent, but " << st.sends << " messages were sent";
  } else if (st.max_pending_recvs < 2) {
    local << "at most " << st.max_pending_recvs << " receive was posted at a time: keep two or more segment "
          << "receives posted so that segments of different levels move at once";
  } else if (st.recvs < segments) {
    local << st.recvs << " messages received for " << count * 4 << " bytes with " << seg
          << "-byte segments (at least " << segments << " expected): is the buffer cut into segments?";
  }
  record("measured", "max " + std::to_string(st.max_pending_recvs) + " receives in flight");
  record("threshold", ">= 2 receives in flight on every rank");
  if (!agree_all(local.str().empty())) FAIL() << gather_text(local.str());
}

TEST(Correctness, DoubleTreeBalancesTheLoad) {
  const int n = world().size();
  const std::size_t count = 100000;  // even: two equal halves
  std::string ni;
  const std::uint64_t most = busiest_rank_bytes(dual(16 * 1024), count, &ni);
  if (!ni.empty()) FAIL() << ni;
  // Each rank is interior (sends a half up and twice down: 3 halves) in at most one tree
  // and a leaf (sends a half up) in the other: at most 2 x count elements.
  const std::uint64_t bound = 2 * count * 4;
  record("measured", std::to_string(most) + " bytes sent by the busiest rank");
  record("threshold", "<= 2 x count x 4 = " + std::to_string(bound));
  EXPECT_LE(most, bound) << "the busiest rank sent " << most << " bytes for an all-reduce of " << count * 4
                         << " bytes; with the second tree shifted (odd n) or mirrored (even n) no rank is interior in "
                         << "both trees, so none sends more than " << bound
                         << ". Is the second half running over binary_tree again?";
}

TEST(Correctness, AlgorithmSelectorFollowsTheModel) {
  std::string failure;
  std::string ni = run_lab_code([&] {
    const lab11::AlphaBeta m{2e-6, 1e-9};
    auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-12 + 1e-9 * std::fabs(b); };
    for (int n : {2, 3, 4, 5, 8, 16}) {
      int d = 0;
      while ((1 << d) < n) ++d;
      for (std::size_t b : {std::size_t(8), std::size_t(4096), std::size_t(1) << 20, std::size_t(64) << 20}) {
        const double ring = 2.0 * (n - 1) * m.alpha + 2.0 * (n - 1) / n * b * m.beta;
        const double tree = 2.0 * d * m.alpha + 2.0 * b * m.beta;
        std::ostringstream s;
        if (!close(lab11::predicted_ring_time(m, n, b), ring))
          s << "predicted_ring_time(n=" << n << ", bytes=" << b << ") = " << lab11::predicted_ring_time(m, n, b)
            << ", expected " << ring;
        else if (!close(lab11::predicted_tree_time(m, n, b), tree))
          s << "predicted_tree_time(n=" << n << ", bytes=" << b << ") = " << lab11::predicted_tree_time(m, n, b)
            << ", expected " << tree;
        else if (lab11::select_algorithm(m, n, b) != (tree <= ring ? lab11::Algorithm::tree : lab11::Algorithm::ring))
          s << "select_algorithm(n=" << n << ", bytes=" << b << ") picked the slower algorithm (ring " << ring
            << " s, tree " << tree << " s)";
        if (!s.str().empty()) {
          failure = s.str();
          return;
        }
      }
      const double x = std::max(0.0, n * ((n - 1) - d) * m.alpha / m.beta);
      if (!close(lab11::predicted_crossover_bytes(m, n), x)) {
        failure = "predicted_crossover_bytes(n=" + std::to_string(n) +
                  ") = " + std::to_string(lab11::predicted_crossover_bytes(m, n)) + ", expected " + std::to_string(x);
        return;
      }
    }
  });
  if (!ni.empty()) FAIL() << ni;
  EXPECT_TRUE(failure.empty()) << failure;
}

TEST(Performance, DoubleTreeSmallMessageLatencyVsMpiAllreduce) {
  comm::Communicator& w = world();
  const int n = w.size();
  if (n != 2 && n != 4) GTEST_SKIP() << "measured with 2 and 4 ranks only (this run has " << n << ")";
  comm::HarnessOptions o;
  o.min_bytes = o.max_bytes = 8;
  o.iters = 300;
  o.warmup = 20;
  o.in_place = false;
  std::vector<comm::Implementation> impls = {{"tree", dual(lab11::default_segment_bytes)},
                                             comm::library_implementation(w)};
  std::vector<comm::Result> res;
  std::string ni = run_lab_code([&] { res = comm::run_allreduce_sweep(w, impls, o, nullptr); });
  if (!ni.empty()) FAIL() << ni;
  ASSERT_EQ(res.size(), 2u);
  ASSERT_EQ(res[0].out_of_place.wrong, 0u) << "double_tree_allreduce gave wrong results for 8 bytes";
  const double ratio = res[0].out_of_place.time_us / res[1].out_of_place.time_us;
  std::ostringstream m;
  m.precision(2);
  m << std::fixed << ratio << "x (" << res[0].out_of_place.time_us << " vs " << res[1].out_of_place.time_us << " us)";
  record("measured", m.str());
  record("threshold", "<= 3.00x MPI_Allreduce time for 8 bytes");
  EXPECT_LE(ratio, 3.0) << "double_tree_allreduce takes " << m.str() << " of MPI_Allreduce's time for 8 bytes with "
                        << n << " ranks; the goal is 3x. Small messages pay per message: avoid allocations, "
                        << "extra messages and copies when the whole buffer is one segment.";
}
