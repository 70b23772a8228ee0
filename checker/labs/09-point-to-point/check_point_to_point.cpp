// Checks of lab 09 (point-to-point). Run under mpirun with 1..8 ranks by
// `./workbook check 09`; every rank runs every check and all ranks agree on the verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "comm/check.h"
#include "comm/error.h"
#include "comm_check/lab_checks.h"
#include "point_to_point.h"

namespace {

using comm::Collective;
using comm::DataType;
using comm::RedOp;
using comm::check::agree_all;
using comm::check::expect_lab_verdict;
using comm::check::gather_text;
using comm::check::record;
using comm::check::run_counted;
using comm::check::world;

// The communicator's own clock on rank 0's round trips in the same run: from the post of
// the i-th send to rank 1 to the completion of the i-th receive from it. A learner's one-way
// time covers the same interval (plus two clock reads), halved: its ratio to this one is
// 1.0-1.1 for a correct pingpong and 2 or more for a round trip (or a sum) returned as is.
// Empty when that ratio lies within [min_ratio, max_ratio] (the check's limits), else what is wrong.
std::string one_way_time_mismatch(const std::vector<comm::MessageTime>& times, double reported, std::size_t bytes,
                                  int iters, double min_ratio, double max_ratio) {
  std::vector<double> sends, recvs_done;
  for (const comm::MessageTime& m : times) {
    if (m.peer != 1) continue;
    (m.recv ? recvs_done : sends).push_back(m.recv ? m.completed : m.posted);
  }
  std::vector<double> halves;
  for (std::size_t i = 0; i < sends.size() && i < recvs_done.size(); ++i)
    halves.push_back((recvs_done[i] - sends[i]) / 2);
  if (halves.size() != static_cast<std::size_t>(iters)) return "";  // the message counts are checked elsewhere
  std::sort(halves.begin(), halves.end());
  const double measured = halves[halves.size() / 2];
  if (!(measured > 0)) return "";
  const double ratio = reported / measured;
  if (ratio >= min_ratio && ratio <= max_ratio) return "";
  std::ostringstream s;
  s << "pingpong(" << bytes << " bytes, " << iters << " round trips) returned " << reported
    << " s on rank 0, but the communicator timed the same round trips at a median of " << 2 * measured
    << " s, so the one-way time is " << measured << " s (" << ratio << "x of it). ";
  if (ratio > max_ratio)
    s << "Return half of a round trip (the median over round trips), not the whole round trip or a sum.";
  else
    s << "Time from before the send to after the receive that completes the round trip, and halve that.";
  return s.str();
}

}  // namespace

WB_CHECK(Correctness, PingPongMovesTheBytesBackAndForth, .weight = 1,
         .limits = {{"min_time_ratio", 0.6}, {"max_time_ratio", 1.6}},
         .passes = "`pingpong` of 0 B, 8 B and 1 MiB, 5 round trips: message and byte counts on each rank, the "
                   "data returned intact, a positive time on rank 0 only, within {min_time_ratio}x.."
                   "{max_time_ratio}x of the median half round trip the communicator clocked",
         .hint = "Rank 0: send then recv; rank 1: recv then send, on the same buffer; ranks >= 2 and a "
                 "lone rank do nothing. Rank 0 returns the median of half a round trip (wtime before the "
                 "send to after the recv, divided by 2).") {
  comm::Communicator& w = world();
  const int n = w.size(), r = w.rank();
  const int iters = 5;
  constexpr double kMinTimeRatio = WB_LIMIT("min_time_ratio"), kMaxTimeRatio = WB_LIMIT("max_time_ratio");
  for (std::size_t bytes : {std::size_t(0), std::size_t(8), std::size_t(1) << 20}) {
    std::vector<unsigned char> pattern(bytes), host(bytes);
    for (std::size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<unsigned char>(i * 31 + 7);
    comm::Buffer buf = w.allocate(bytes);
    // Rank 0 starts with the pattern, rank 1 with zeros: the pattern must travel.
    if (r == 0) comm::copy(buf.data(), buf.space(), pattern.data(), comm::MemorySpace::host, bytes);
    else comm::fill_bytes(buf.data(), buf.space(), 0, bytes);
    double t = -1;
    std::string ni = run_counted(w, [&] { t = lab09::pingpong(w, buf.data(), bytes, iters); }, "pingpong", true);
    if (!ni.empty()) FAIL() << ni;
    comm::copy(host.data(), comm::MemorySpace::host, buf.data(), buf.space(), bytes);
    const comm::Stats st = w.stats();
    std::ostringstream local;
    const bool takes_part = n >= 2 && r <= 1;
    const std::uint64_t want_msgs = takes_part ? iters : 0;
    if (st.sends != want_msgs || st.recvs != want_msgs)
      local << "pingpong(" << bytes << " bytes, " << iters << " round trips): rank " << r << " sent " << st.sends
            << " and received " << st.recvs << " messages, expected " << want_msgs << " each"
            << (takes_part ? "" : " (only ranks 0 and 1 take part; with one rank there is no partner)");
    else if (takes_part && st.bytes_sent != want_msgs * bytes)
      local << "pingpong: rank " << r << " sent " << st.bytes_sent << " bytes, expected " << want_msgs * bytes;
    else if (takes_part && bytes && std::memcmp(host.data(), pattern.data(), bytes) != 0)
      local << "pingpong(" << bytes << " bytes): the buffer on rank " << r
            << " does not hold rank 0's data after the round trips: rank 1 must send back what it received";
    else if (r == 0 && n >= 2 && !(t > 0))
      local << "pingpong returned " << t << " s on rank 0; expected the (positive) one-way time";
    else if (r == 0 && n >= 2)
      local << one_way_time_mismatch(w.message_times(), t, bytes, iters, kMinTimeRatio, kMaxTimeRatio);
    else if ((r != 0 || n == 1) && t != 0)
      local << "pingpong returned " << t << " on rank " << r << "; only rank 0 with a partner returns a time";
    if (!agree_all(local.str().empty())) FAIL() << gather_text(local.str());
  }
  record("measured", "messages, bytes and data as expected");
}

WB_CHECK(Correctness, FitAlphaBetaRecoversAKnownLine, .weight = 1,
         .limits = {{"exact_alpha_tol", 1e-12}, {"exact_beta_tol", 1e-16}, {"noisy_beta_rel", 0.02},
                    {"skewed_alpha_rel", 0.1}},
         .passes = "exact samples of a known line give alpha within {exact_alpha_tol} s and beta within "
                   "{exact_beta_tol} s/B; with +-1% noise, beta within {noisy_beta_rel:.0%}; with the largest "
                   "sample 20% slow, alpha within {skewed_alpha_rel:.0%}",
         .hint = "Weighted least squares with weights 1/t^2: weighted means, then beta = Sxy/Sxx and "
                 "alpha = mean_t - beta mean_b.") {
  constexpr double kExactAlphaTol = WB_LIMIT("exact_alpha_tol"), kExactBetaTol = WB_LIMIT("exact_beta_tol");
  constexpr double kNoisyBetaRel = WB_LIMIT("noisy_beta_rel"), kSkewedAlphaRel = WB_LIMIT("skewed_alpha_rel");
  expect_lab_verdict([&] {
    const double alpha = 1.5e-6, beta = 2.0e-10;
    std::vector<lab09::Sample> exact, noisy;
    for (double b = 8; b <= 8e6; b *= 4) {
      exact.push_back({b, alpha + beta * b});
      // +-1% multiplicative "noise" alternating in sign: least squares stays close.
      noisy.push_back({b, (alpha + beta * b) * (exact.size() % 2 ? 1.01 : 0.99)});
    }
    lab09::AlphaBeta m = lab09::fit_alpha_beta(exact);
    std::ostringstream s;
    if (std::fabs(m.alpha - alpha) > kExactAlphaTol || std::fabs(m.beta - beta) > kExactBetaTol) {
      s << "fit_alpha_beta on exact samples of t = " << alpha << " + " << beta << " b returned alpha " << m.alpha
        << ", beta " << m.beta << ": least squares should recover the line exactly";
    } else {
      lab09::AlphaBeta q = lab09::fit_alpha_beta(noisy);
      // The largest message 20% slower than the line (a cache or page effect): a fit on
      // relative residuals keeps alpha within skewed_alpha_rel of the truth, a plain fit
      // makes it negative.
      std::vector<lab09::Sample> skewed;
      for (double b = 8; b <= 2e7; b *= 8) skewed.push_back({b, 2e-6 + 1e-10 * b});
      skewed.back().seconds *= 1.2;
      lab09::AlphaBeta k = lab09::fit_alpha_beta(skewed);
      if (std::fabs(q.beta - beta) > kNoisyBetaRel * beta)
        s << "fit_alpha_beta on samples with 1% noise returned beta " << q.beta << ", expected within "
          << 100 * kNoisyBetaRel << "% of " << beta << ": is it a least-squares fit over all samples?";
      else if (std::fabs(k.alpha - 2e-6) > kSkewedAlphaRel * 2e-6)
        s << "fit_alpha_beta returned alpha " << k.alpha << " s for samples of t = 2 us + 0.1 ns/B x b whose "
          << "largest message is 20% slow; expected within " << 100 * kSkewedAlphaRel << "% of 2 us. Weight "
          << "the residuals by 1/t^2 so the largest messages do not decide alpha.";
    }
    return s.str();
  });
}

WB_CHECK(Correctness, FitAlphaBetaRejectsAnUndeterminedLine, .weight = 1,
         .passes = "two samples of the same size (an undetermined line) throw a `comm::Error` (COMM_THROW)",
         .hint = "When all sizes are equal, Sxx is 0: throw with COMM_THROW.") {
  expect_lab_verdict([]() -> std::string {
    try {
      lab09::fit_alpha_beta({{1024, 1e-6}, {1024, 2e-6}});
    } catch (const comm::NotImplemented&) {
      throw;
    } catch (const comm::Error&) {
      return "";
    }
    return "fit_alpha_beta accepted two samples of the same size; the line is undetermined: throw (COMM_THROW)";
  });
}

// The six sweeps of naive_allreduce: one type and operator each, one hint for all.
#define NAIVE_SWEEP(NAME, TYPE, OP)                                                                  \
  WB_CHECK(Correctness, NAME, .weight = 1,                                                           \
           .passes = "`naive_allreduce` of the check's type and operator (float, double, "         \
                     "int32 x sum, max): sizes 0, 1, 7, n-1, n+1, 1 MiB + 3 elements; in and "     \
                     "out of place; bit-exact on every rank",                                      \
           .hint = "Rank 0 must reduce every other rank's buffer exactly once, then send the result " \
                   "to every rank.") {                                                               \
    comm::check::expect_allreduce_sweep(lab09::naive_allreduce, TYPE, OP, "naive_allreduce");          \
  }
NAIVE_SWEEP(NaiveAllreduceFloatSum, DataType::f32, RedOp::sum)
NAIVE_SWEEP(NaiveAllreduceFloatMax, DataType::f32, RedOp::max)
NAIVE_SWEEP(NaiveAllreduceDoubleSum, DataType::f64, RedOp::sum)
NAIVE_SWEEP(NaiveAllreduceDoubleMax, DataType::f64, RedOp::max)
NAIVE_SWEEP(NaiveAllreduceInt32Sum, DataType::i32, RedOp::sum)
NAIVE_SWEEP(NaiveAllreduceInt32Max, DataType::i32, RedOp::max)

WB_CHECK(Correctness, NaiveAllreduceGoesThroughTheRoot, .weight = 1,
         .passes = "`naive_allreduce` of 10007 floats: the root sends and receives `(n-1) x bytes`, every "
                   "other rank one buffer each way; a lone rank sends nothing",
         .hint = "Rank 0 receives n-1 whole buffers and sends n-1 whole buffers; the others send one and "
                 "receive one.") {
  comm::Communicator& w = world();
  const int n = w.size();
  const std::size_t count = 10007, bytes = count * 4;
  std::string ni = comm::check::run_allreduce_counted(w, lab09::naive_allreduce, count, "naive_allreduce");
  if (!ni.empty()) FAIL() << ni;
  const comm::Stats st = w.stats();
  const std::uint64_t peers = static_cast<std::uint64_t>(n - 1);
  const std::uint64_t want_sent = w.rank() == 0 ? peers * bytes : bytes, want_recv = want_sent;
  std::ostringstream local;
  if (n > 1 && (st.bytes_sent != want_sent || st.bytes_received != want_recv))
    local << "rank " << w.rank() << " sent " << st.bytes_sent << " and received " << st.bytes_received
          << " bytes; the naive all-reduce moves whole buffers through rank 0: expected " << want_sent << " and "
          << want_recv;
  else if (n == 1 && st.sends)
    local << "with one rank nothing needs to be sent, but " << st.sends << " messages were sent";
  record("measured", "root sent " + std::to_string(n > 1 ? peers * bytes : 0) + " bytes");
  if (!agree_all(local.str().empty())) FAIL() << gather_text(local.str());
}

WB_CHECK(Correctness, PredictedNaiveTimeFollowsTheModel, .weight = 1, .limits = {{"rel_tol", 1e-9}},
         .passes = "`predicted_naive_allreduce_time` for n = 2, 3, 8 and 8 B, 1 MiB equals "
                   "`2 (n-1) (alpha + bytes beta)` within a relative {rel_tol}",
         .hint = "2 (n-1) (alpha + bytes beta): the root's messages happen one after another.") {
  constexpr double kRelTol = WB_LIMIT("rel_tol");
  expect_lab_verdict([]() -> std::string {
    const lab09::AlphaBeta m{3e-6, 5e-10};
    for (int n : {2, 3, 8})
      for (std::size_t b : {std::size_t(8), std::size_t(1) << 20}) {
        const double want = 2.0 * (n - 1) * (m.alpha + b * m.beta);
        const double got = lab09::predicted_naive_allreduce_time(m, n, b);
        if (std::fabs(got - want) > kRelTol * want)
          return "predicted_naive_allreduce_time(n=" + std::to_string(n) + ", bytes=" + std::to_string(b) +
                 ") = " + std::to_string(got) + ", expected 2(n-1)(alpha + bytes beta) = " + std::to_string(want);
      }
    return "";
  });
}

// ---- steps 5 and 6: linear broadcast, reduce, gather and scatter ----------------------------

namespace {

comm::check::CollectiveFn linear(Collective kind) {
  return [kind](const void* s, void* r, std::size_t c, DataType t, RedOp op, int root, comm::Communicator& w) {
    switch (kind) {
      case Collective::broadcast: lab09::linear_broadcast(s, r, c, t, root, w); break;
      case Collective::reduce: lab09::linear_reduce(s, r, c, t, op, root, w); break;
      case Collective::gather: lab09::linear_gather(s, r, c, t, root, w); break;
      case Collective::scatter: lab09::linear_scatter(s, r, c, t, root, w); break;
      default: COMM_THROW("no linear version of this collective");
    }
  };
}

// Sweeps of linear_<kind> (counts, roots, in and out of place), compared bit for bit with the
// library's collective: float and int32 (reduce: float sum, int32 max, double sum).
void linear_sweep(Collective kind) {
  const bool reduce = kind == Collective::reduce;
  std::vector<std::pair<DataType, RedOp>> cases = {{DataType::f32, RedOp::sum},
                                                   {DataType::i32, reduce ? RedOp::max : RedOp::sum}};
  if (reduce) cases.push_back({DataType::f64, RedOp::sum});
  comm::check::expect_collective_sweeps(linear(kind), kind, std::string("linear_") + comm::name_of(kind), cases);
}

}  // namespace

// What passes, for LinearBroadcast, LinearReduce, LinearGather, LinearScatter.
constexpr char kLinearPasses[] = "`linear_<collective>` against the library's collective, bit-exact on every rank: "
                                 "float and int32 (reduce: float sum, int32 max, double sum); sizes 0, 1, 7, n-1, "
                                 "n+1, 1 MiB + 3 elements; roots 0, n/2, n-1; in and out of place; an out-of-place "
                                 "send buffer unchanged; a non-root's reduce and gather `recvbuf` untouched";

WB_CHECK(Correctness, LinearBroadcast, .weight = 1,
         .passes = kLinearPasses,
         .hint = "The root copies sendbuf to recvbuf unless they are the same buffer, then sends recvbuf "
                 "to every rank but itself; every root 0..n-1 must work.") {
  linear_sweep(Collective::broadcast);
}
WB_CHECK(Correctness, LinearReduce, .weight = 1,
         .passes = kLinearPasses,
         .hint = "Receive into comm.scratch(), not into recvbuf on a rank that is not the root; start "
                 "the root's recvbuf from its own sendbuf (unless in place).") {
  linear_sweep(Collective::reduce);
}
WB_CHECK(Correctness, LinearGather, .weight = 1,
         .passes = kLinearPasses,
         .hint = "Rank q's block starts at byte q * count * size_of(type) of the root's recvbuf, whoever "
                 "the root is; in place the root's block is already there.") {
  linear_sweep(Collective::gather);
}
WB_CHECK(Correctness, LinearScatter, .weight = 1,
         .passes = kLinearPasses,
         .hint = "Block q of the root's sendbuf goes to rank q; the root keeps its own block (already in "
                 "place when recvbuf == sendbuf + root * block).") {
  linear_sweep(Collective::scatter);
}

// Linear means one step: the root exchanges one message with each other rank, the others one
// message with the root. A relay (a chain or a tree) gives the same result and fails here.
WB_CHECK(Correctness, LinearCollectivesTalkToTheRootOnly, .weight = 1,
         .passes = "broadcast, reduce, gather and scatter of 1000 floats from root n-1: the root exchanges one "
                   "message with each other rank, every other rank one with the root (no relays)",
         .hint = "One message between the root and each other rank; no rank passes data on for another.") {
  comm::Communicator& w = world();
  const int n = w.size(), r = w.rank(), root = n - 1;
  const std::size_t count = 1000, block = count * 4;
  comm::Buffer send = w.allocate(block * n), recv = w.allocate(block * n);
  comm::fill_bytes(send.data(), send.space(), 0, block * n);
  std::ostringstream local;
  for (Collective kind : {Collective::broadcast, Collective::reduce, Collective::gather, Collective::scatter}) {
    std::string ni = run_counted(
        w, [&] { linear(kind)(send.data(), recv.data(), count, DataType::f32, RedOp::sum, root, w); },
        std::string("linear_") + comm::name_of(kind), true);
    if (!ni.empty()) FAIL() << ni;
    // Data flows out of the root for broadcast and scatter, into it for reduce and gather.
    const bool outward = kind == Collective::broadcast || kind == Collective::scatter;
    std::size_t to_root = 0, from_root = 0, others = 0;
    for (const comm::MessageTime& m : w.message_times()) {
      if (m.peer != root) ++others;
      else if (m.recv) ++from_root;
      else ++to_root;
    }
    const comm::Stats st = w.stats();
    const std::uint64_t peers = static_cast<std::uint64_t>(n - 1);
    std::ostringstream why;
    if (r == root) {
      const std::uint64_t out = outward ? peers : 0, in = outward ? 0 : peers;
      if (st.sends != out || st.recvs != in)
        why << "the root sent " << st.sends << " and received " << st.recvs << " messages, expected " << out
            << " and " << in << " (one " << (outward ? "to" : "from") << " each other rank)";
    } else if (others > 0 || (outward ? from_root != 1 || to_root != 0 : to_root != 1 || from_root != 0)) {
      why << "rank " << r << " exchanged " << others << " messages with ranks other than the root and "
          << (outward ? from_root : to_root) << " with the root, expected exactly one " << (outward ? "from" : "to")
          << " root " << root << " and nothing else";
    }
    if (!why.str().empty())
      local << comm::name_of(kind) << " of " << count << " float from root " << root << ": " << why.str()
            << "; a linear " << comm::name_of(kind) << " has no relays (trees are lab 11).\n";
  }
  record("measured", "messages per rank counted for broadcast, reduce, gather and scatter");
  if (!agree_all(local.str().empty())) FAIL() << gather_text(local.str());
}
