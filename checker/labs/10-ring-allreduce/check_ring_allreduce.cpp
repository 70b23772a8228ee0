// Checks of lab 10 (ring all-reduce). Run under mpirun with 1..8 ranks by
// `./workbook check 10`; every rank runs every check and all ranks agree on the verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "comm/check.h"
#include "comm/error.h"
#include "comm/harness.h"
#include "comm/reduce.h"
#include "comm_check/lab_checks.h"
#include "ring_allreduce.h"
#include "timed.h"

namespace {

using comm::DataType;
using comm::RedOp;
using comm::check::agree_all;
using comm::check::ceil_log2;
using comm::check::expect_lab_verdict;
using comm::check::gather_text;
using comm::check::record;
using comm::check::run_lab_code;
using comm::check::world;

comm::AllreduceFn pipelined(std::size_t segment_bytes) {
  return [segment_bytes](const void* s, void* r, std::size_t c, DataType t, RedOp op, comm::Communicator& w) {
    lab10::ring_allreduce_pipelined(s, r, c, t, op, w, segment_bytes);
  };
}

}  // namespace

// ---- step 1 ---------------------------------------------------------------------------

WB_CHECK(Correctness, ChunkOfPartition, .weight = 1,
         .passes = "`chunk_of(count, n, c)` against the partition contract for every chunk c, n = 1..9 and "
                   "count = 0, 1, 2, 3, 7, 8, 9, 10, 100, 1000003",
         .hint = "Chunk c starts at c*(count/n) + min(c, count%n) and holds count/n elements, plus one "
                 "when c < count%n.") {
  expect_lab_verdict([]() -> std::string {
    for (std::size_t count : std::vector<std::size_t>{0, 1, 2, 3, 7, 8, 9, 10, 100, 1000003})
      for (int n = 1; n <= 9; ++n)
        for (int c = 0; c < n; ++c) {
          const lab10::Chunk got = lab10::chunk_of(count, n, c);
          const comm::check::Range want = comm::check::reference_chunk(count, n, c);
          if (got.offset == want.offset && got.count == want.count) continue;
          std::ostringstream s;
          s << "chunk_of(count=" << count << ", n=" << n << ", c=" << c << ") returned {offset " << got.offset
            << ", count " << got.count << "}, expected {offset " << want.offset << ", count " << want.count
            << "}: chunks cover [0, count) in order; the first count % n chunks hold one element more.";
          return s.str();
        }
    return "";
  });
}

// ---- step 2 ---------------------------------------------------------------------------

WB_CHECK(Correctness, ReduceScatterLeavesChunkRankReduced, .weight = 1,
         .passes = "`ring_reduce_scatter` alone, float sum and int32 max, sizes 0, 1, 7, n-1, n+1, 1 MiB + 3 "
                   "elements: chunk r bit-exact on rank r",
         .hint = "At step s send chunk (r-s-1) mod n right, receive chunk (r-s-2) mod n from the left "
                 "into scratch, then comm.reduce it into place.") {
  comm::Communicator& w = world();
  const int n = w.size(), r = w.rank();
  std::size_t cases = 0;
  for (auto [type, op] : {std::pair{DataType::f32, RedOp::sum}, std::pair{DataType::i32, RedOp::max}}) {
    for (std::size_t count : comm::check::sweep_counts(n, type)) {
      const std::size_t elem = comm::size_of(type), bytes = count * elem;
      std::vector<char> input(bytes), expect(bytes), got(bytes);
      comm::fill_input(input.data(), count, type, comm::DataMode::verifiable, op, n, r, 11);
      comm::expected_allreduce(expect.data(), nullptr, count, type, comm::DataMode::verifiable, op, n, 11);
      comm::Buffer buf = w.allocate(bytes);
      comm::copy(buf.data(), buf.space(), input.data(), comm::MemorySpace::host, bytes);
      std::string ni =
          run_lab_code([&] { lab10::ring_reduce_scatter(buf.data(), count, type, op, w); }, "ring_reduce_scatter");
      if (!ni.empty()) FAIL() << ni;
      comm::copy(got.data(), comm::MemorySpace::host, buf.data(), buf.space(), bytes);
      const comm::check::Range own = comm::check::reference_chunk(count, n, r);
      comm::Mismatch m;
      std::size_t wrong = comm::count_wrong(got.data() + own.offset * elem, expect.data() + own.offset * elem, nullptr,
                                            own.count, type, &m);
      std::ostringstream local;
      if (wrong)
        local << "reduce-scatter of " << count << " " << comm::name_of(type) << " with " << comm::name_of(op)
              << ": chunk " << r << " [" << own.offset << ", " << own.offset + own.count
              << ") should hold the reduction over all " << n << " ranks, but " << wrong
              << " elements are wrong; first at index " << own.offset + m.index << ": expected " << m.expected
              << ", got " << m.got << ". After n-1 steps rank r must own chunk r: at step s send chunk (r-s-1) mod n, "
              << "receive (r-s-2) mod n.";
      if (!agree_all(local.str().empty())) FAIL() << gather_text(local.str());
      ++cases;
    }
  }
  record("measured", std::to_string(cases) + " cases bit-exact");
}

// ---- step 3 ---------------------------------------------------------------------------

WB_CHECK(Correctness, AllgatherDistributesEveryChunk, .weight = 1,
         .passes = "`ring_allgather` alone, float, double and int32, sizes 0, 1, 7, n-1, n+1, 1 MiB + 3 "
                   "elements, each rank starting with only its own chunk: the whole buffer bit-exact on every "
                   "rank",
         .hint = "At step s send chunk (r-s) mod n right and receive chunk (r-s-1) mod n from the left "
                 "straight into the buffer.") {
  comm::Communicator& w = world();
  const int n = w.size(), r = w.rank();
  std::size_t cases = 0;
  for (DataType type : {DataType::f32, DataType::f64, DataType::i32}) {
    for (std::size_t count : comm::check::sweep_counts(n, type)) {
      const std::size_t elem = comm::size_of(type), bytes = count * elem;
      // The final value of element i is rank-independent; each rank starts with only its chunk.
      std::vector<char> expect(bytes), start(bytes), got(bytes);
      comm::fill_input(expect.data(), count, type, comm::DataMode::verifiable, RedOp::max, n, n + 5, 13);
      std::memset(start.data(), 0xff, bytes);
      const comm::check::Range own = comm::check::reference_chunk(count, n, r);
      std::memcpy(start.data() + own.offset * elem, expect.data() + own.offset * elem, own.count * elem);
      comm::Buffer buf = w.allocate(bytes);
      comm::copy(buf.data(), buf.space(), start.data(), comm::MemorySpace::host, bytes);
      std::string ni = run_lab_code([&] { lab10::ring_allgather(buf.data(), count, type, w); }, "ring_allgather");
      if (!ni.empty()) FAIL() << ni;
      comm::copy(got.data(), comm::MemorySpace::host, buf.data(), buf.space(), bytes);
      comm::Mismatch m;
      std::size_t wrong = comm::count_wrong(got.data(), expect.data(), nullptr, count, type, &m);
      std::ostringstream local;
      if (wrong) {
        int chunk = 0;  // the chunk of the first wrong element, which its owner rank sent around
        for (int c = 0; c < n; ++c) {
          const comm::check::Range rc = comm::check::reference_chunk(count, n, c);
          if (m.index >= rc.offset && m.index < rc.offset + rc.count) chunk = c;
        }
        local << "all-gather of " << count << " " << comm::name_of(type) << ": " << wrong
              << " elements wrong; first at index " << m.index << " (chunk " << chunk << ", owned by rank " << chunk
              << "): expected " << m.expected << ", got " << m.got
              << ". At step s rank r sends chunk (r-s) mod n and receives chunk (r-s-1) mod n.";
      }
      if (!agree_all(local.str().empty())) FAIL() << gather_text(local.str());
      ++cases;
    }
  }
  record("measured", std::to_string(cases) + " cases bit-exact");
}

// ---- step 4 ---------------------------------------------------------------------------

#define RING_SWEEP(NAME, TYPE, OP)                                                                     \
  WB_CHECK(Correctness, NAME, .weight = 1,                                                             \
           .passes = "`ring_allreduce` of the check's type and operator (float, double, int32 x sum, "   \
                     "max): sizes 0, 1, 7, n-1, n+1, 1 MiB + 3 elements; out of place and in place; "    \
                     "bit-exact on every rank",                                                          \
           .hint = "Check chunk offsets for count % n != 0 and that every chunk is reduced once and then " \
                   "gathered.") {                                                                      \
    comm::check::expect_allreduce_sweep(lab10::ring_allreduce, TYPE, OP, "ring_allreduce");            \
  }
RING_SWEEP(RingAllreduceFloatSum, DataType::f32, RedOp::sum)
RING_SWEEP(RingAllreduceFloatMax, DataType::f32, RedOp::max)
RING_SWEEP(RingAllreduceDoubleSum, DataType::f64, RedOp::sum)
RING_SWEEP(RingAllreduceDoubleMax, DataType::f64, RedOp::max)
RING_SWEEP(RingAllreduceInt32Sum, DataType::i32, RedOp::sum)
RING_SWEEP(RingAllreduceInt32Max, DataType::i32, RedOp::max)

WB_CHECK(Correctness, RingAllreduceRandomFloatWithinErrorBound, .weight = 1,
         .passes = "`ring_allreduce` of 262147 random floats, sum: every element within the rounding bound "
                   "`gamma(n-1) sum |x|` of the exact sum",
         .hint = "Each element must be reduced exactly once per rank; any order of additions is fine.") {
  const std::size_t count = (std::size_t(1) << 20) / 4 + 3;
  std::string failure = comm::check::check_allreduce(lab10::ring_allreduce, count, DataType::f32, RedOp::sum, false,
                                                     comm::DataMode::random, 99, "ring_allreduce");
  if (!failure.empty()) ADD_FAILURE() << failure;
}

WB_CHECK(Correctness, RingAllreduce64MiB, .weight = 1, .timeout_s = 300,
         .passes = "`ring_allreduce` and `ring_allreduce_pipelined` (default segment size) of 64 MiB per rank, "
                   "float sum and int32 max, out of place: bit-exact on every rank",
         .hint = "Large buffers need non-blocking calls: post the receive before sending, never two "
                 "blocking sends facing each other.") {
  comm::check::expect_allreduce_64mib({{lab10::ring_allreduce, "ring_allreduce"},
                                       {pipelined(lab10::default_segment_bytes), "ring_allreduce_pipelined"}});
}

WB_CHECK(Correctness, RingAllreduceSendsTheOptimalVolume, .weight = 1,
         .passes = "`ring_allreduce` of 262147 floats: all ranks together send exactly `2(n-1) x count x 4` "
                   "bytes",
         .hint = "Send chunks, not whole buffers: each chunk crosses each link once per phase.") {
  comm::Communicator& w = world();
  const int n = w.size();
  const std::size_t count = (std::size_t(1) << 20) / 4 + 3, bytes = count * 4;
  std::string ni = comm::check::run_allreduce_counted(w, lab10::ring_allreduce, count, "ring_allreduce");
  if (!ni.empty()) FAIL() << ni;
  double mine = static_cast<double>(w.stats().bytes_sent), total = 0;
  w.library_allreduce(&mine, &total, 1, DataType::f64, RedOp::sum);
  const double want = 2.0 * (n - 1) * static_cast<double>(bytes);
  record("measured", std::to_string(static_cast<std::size_t>(total)) + " bytes sent by all ranks");
  EXPECT_EQ(total, want) << "a ring all-reduce of " << count << " floats over " << n << " ranks sends each chunk n-1 "
                         << "times in the reduce-scatter and n-1 times in the all-gather: " << want
                         << " bytes in total, but the ranks sent " << total
                         << (total > want ? " (more: is data sent twice, or whole buffers instead of chunks?)"
                                          : " (less: is a phase or a chunk missing?)");
}

// ---- step 5 ---------------------------------------------------------------------------

#define PIPELINED_SWEEP(NAME, TYPE, OP)                                                              \
  WB_CHECK(Correctness, NAME, .weight = 1,                                                           \
           .passes = "`ring_allreduce_pipelined` of the check's type and operator (float, double, int32 " \
                     "x sum, max) with segments of 2 elements (small sizes) or 4 KiB: sizes 0, 1, 7, "   \
                     "n-1, n+1, 1 MiB + 3 elements; out of place and in place; bit-exact on every rank", \
           .hint = "Segments of different steps must not be confused: sender and receiver must agree " \
                   "on which segment each tag names.") {                                             \
    /* small segments so every size of the sweep is cut into several segments */                   \
    comm::check::expect_allreduce_sweep(                                                             \
        [](std::size_t count, DataType t) { return pipelined(count < 4096 ? 2 * comm::size_of(t) : 4096); }, TYPE, \
        OP, "ring_allreduce_pipelined");                                                             \
  }
PIPELINED_SWEEP(PipelinedFloatSum, DataType::f32, RedOp::sum)
PIPELINED_SWEEP(PipelinedFloatMax, DataType::f32, RedOp::max)
PIPELINED_SWEEP(PipelinedDoubleSum, DataType::f64, RedOp::sum)
PIPELINED_SWEEP(PipelinedDoubleMax, DataType::f64, RedOp::max)
PIPELINED_SWEEP(PipelinedInt32Sum, DataType::i32, RedOp::sum)
PIPELINED_SWEEP(PipelinedInt32Max, DataType::i32, RedOp::max)

// More transfers than there are tags: one-float segments and a count chosen so that the
// transfer index passes Communicator::max_tag (32767) with any rank count. Tags must wrap into
// 0..max_tag; a tag of 32768 (a wrap at max_tag + 2, or no wrap) is rejected by the communicator.
WB_CHECK(Correctness, PipelinedWrapsTagsPastMaxTag, .weight = 1, .ranks = {2, 3, 4, 5, 8},
         .passes = "`ring_allreduce_pipelined` float sum with one-float segments and more transfers than there "
                   "are tags (`2(n-1)` steps x `16384/(n-1) + 2` segments, 32772 or more): bit-exact on every "
                   "rank; tags must wrap into 0..32767",
         .hint = "Tags must stay in 0..comm::Communicator::max_tag (32767): wrap the transfer index with "
                 "% (max_tag + 1); MPI keeps same-tag messages in order, so reusing a tag is safe.") {
  const int n = world().size();
  if (n == 1) GTEST_SKIP() << "one rank sends nothing";
  const std::size_t steps = 2 * static_cast<std::size_t>(n - 1);
  const std::size_t nseg = (comm::Communicator::max_tag + 1) / steps + 2;  // segments per chunk
  const std::size_t count = nseg * static_cast<std::size_t>(n);
  std::string failure = comm::check::check_allreduce(pipelined(sizeof(float)), count, DataType::f32, RedOp::sum,
                                                     false, comm::DataMode::verifiable, 5, "ring_allreduce_pipelined");
  if (!failure.empty()) ADD_FAILURE() << failure;
}

WB_CHECK(Correctness, PipelinedKeepsTwoSegmentsInFlight, .weight = 1,
         .limits = {{"min_recvs_in_flight", 2}, {"min_overlapped_share", 0.5}},
         .passes = "`ring_allreduce_pipelined` of 262147 floats with 16 KiB segments: >= {min_recvs_in_flight} "
                   "receives posted at once; >= {min_overlapped_share:.0%} of the reductions run while a receive "
                   "is in flight; at least `2(n-1)` x (segments of the largest chunk) messages sent (chunks are "
                   "segmented); at most `(n-1)` x (largest chunk) elements reduced (nothing is reduced twice); a "
                   "lone rank sends nothing",
         .hint = "Post the receives of the next two segments before reducing the current one; forward "
                 "each reduced segment at once.") {
  constexpr double kMinRecvsInFlight = WB_LIMIT("min_recvs_in_flight");
  constexpr double kMinOverlappedShare = WB_LIMIT("min_overlapped_share");
  comm::Communicator& w = world();
  const int n = w.size();
  const std::size_t count = (std::size_t(1) << 20) / 4 + 3, segment = 16 * 1024;
  std::string ni = comm::check::run_allreduce_counted(w, pipelined(segment), count, "ring_allreduce_pipelined");
  if (!ni.empty()) FAIL() << ni;
  const comm::Stats st = w.stats();
  std::ostringstream local;
  const std::size_t largest = comm::check::reference_chunk(count, n, 0).count;
  const std::size_t segments = (largest * 4 + segment - 1) / segment;
  if (n == 1) {
    if (st.sends != 0) local << "with one rank nothing needs to be sent, but " << st.sends << " messages were sent";
  } else if (st.max_pending_recvs < kMinRecvsInFlight) {
    local << "at most " << st.max_pending_recvs << (st.max_pending_recvs == 1 ? " receive was" : " receives were")
          << " posted at a time; keep at least " << kMinRecvsInFlight
          << " segment receives posted (irecv) while reducing the previous segment";
  } else if (st.reductions == 0 || static_cast<double>(st.reductions_overlapped) <
                                       kMinOverlappedShare * static_cast<double>(st.reductions)) {
    local << "only " << st.reductions_overlapped << " of " << st.reductions << " reductions ran while a receive was "
          << "in flight (at least " << 100 * kMinOverlappedShare << "% must); post the next segments' receives "
          << "before reducing the current one";
  } else if (st.sends < static_cast<std::uint64_t>(2 * (n - 1)) * segments) {
    local << st.sends << " messages sent; with " << segment << "-byte segments expected at least " << 2 * (n - 1)
          << " steps x " << segments << " segments = " << 2 * (n - 1) * segments
          << ": are the chunks cut into segments?";
  } else if (st.bytes_sent > 0 && st.reductions > 0 && st.reduced_elements != 0 &&
             st.reduced_elements > static_cast<std::uint64_t>(n - 1) * largest) {
    local << st.reduced_elements << " elements reduced; the reduce-scatter reduces at most (n-1) x "
          << largest << " = " << (n - 1) * largest << " (is a segment reduced more than once?)";
  }
  record("measured", "max " + std::to_string(st.max_pending_recvs) + " receives in flight, " +
                         std::to_string(st.reductions_overlapped) + "/" + std::to_string(st.reductions) +
                         " reductions overlapped");
  if (!agree_all(local.str().empty())) FAIL() << gather_text(local.str());
}

// ---- steps 6 and 7: all-to-all --------------------------------------------------------

namespace {

using AlltoallFn = void (*)(const void*, void*, std::size_t, DataType, comm::Communicator&);
using Messages = std::vector<comm::MessageTime>;

// The all-to-all `f` (the lab's `name`) against the library's: float and int32, every size of the
// sweep, out of place and in place.
void sweep_alltoall(AlltoallFn f, const std::string& name) {
  auto fn = [f](const void* s, void* r, std::size_t c, DataType t, RedOp, int, comm::Communicator& w) {
    f(s, r, c, t, w);
  };
  comm::check::expect_collective_sweeps(fn, comm::Collective::alltoall, name,
                                        {{DataType::f32, RedOp::sum}, {DataType::i32, RedOp::sum}});
}

// Runs the all-to-all `f` (the lab's `name`) of `count` floats per block out of place with its
// messages recorded; returns "" or the not-implemented text, and this rank's sends and receives
// in posted order.
std::string trace_alltoall(AlltoallFn f, const std::string& name, std::size_t count, Messages* sends,
                           Messages* recvs) {
  comm::Communicator& w = world();
  const std::size_t bytes = static_cast<std::size_t>(w.size()) * count * 4;
  comm::Buffer send = w.allocate(bytes), recv = w.allocate(bytes);
  comm::fill_bytes(send.data(), send.space(), 0, bytes);
  std::string ni = comm::check::run_counted(w, [&] { f(send.data(), recv.data(), count, DataType::f32, w); }, name,
                                            true);
  for (const comm::MessageTime& m : w.message_times()) (m.recv ? recvs : sends)->push_back(m);
  return ni;
}

// The number of block indices in [0, n) with bit k set: the blocks Bruck's round k moves.
// Counted per period of 2^(k+1) indices (the second half of each has the bit), not by a loop.
std::size_t blocks_with_bit(int n, int k) {
  const std::size_t period = std::size_t(2) << k, half = std::size_t(1) << k, un = static_cast<std::size_t>(n);
  return un / period * half + (un % period > half ? un % period - half : 0);
}

}  // namespace

WB_CHECK(Correctness, AlltoallPairwise, .weight = 1,
         .passes = "`alltoall_pairwise`, float and int32, blocks of 0, 1, 7, n-1, n+1 and 1 MiB + 3 elements, "
                   "out of place and in place: bit-exact against the library's all-to-all (`MPI_Alltoall`) on "
                   "every rank; out of place, `sendbuf` unchanged",
         .hint = "At step s receive block (r-s) mod n from rank (r-s) mod n into that block, send block "
                 "(r+s) mod n to rank (r+s) mod n; in place, send from a scratch copy of the buffer.") {
  sweep_alltoall(lab10::alltoall_pairwise, "alltoall_pairwise");
}

WB_CHECK(Correctness, PairwiseExchangeOrder, .weight = 1,
         .passes = "`alltoall_pairwise` of 1027-float blocks: each rank sends `n-1` messages of exactly one "
                   "block, the one of step `s` to rank `(r+s) mod n`, in that order, and receives `n-1`",
         .hint = "One message of exactly one block per step, step s = 1..n-1 to rank (r+s) mod n, in "
                 "that order; the own block is a local copy.") {
  comm::Communicator& w = world();
  const int n = w.size(), r = w.rank();
  const std::size_t count = 1027, block = count * 4;
  Messages sends, recvs;
  std::string ni = trace_alltoall(lab10::alltoall_pairwise, "alltoall_pairwise", count, &sends, &recvs);
  if (!ni.empty()) FAIL() << ni;
  std::ostringstream local;
  const std::size_t want = static_cast<std::size_t>(n - 1);
  if (sends.size() != want) {
    local << "sent " << sends.size() << " messages for an all-to-all over " << n
          << " ranks; the pairwise exchange sends n-1 = " << want << ", one block to each other rank"
          << (sends.size() > want ? " (is a block cut into pieces, or sent twice?)" : " (is a step missing?)");
  } else if (recvs.size() != want) {
    local << "received " << recvs.size() << " messages, expected n-1 = " << want << ": one block from each other rank";
  } else {
    for (int s = 1; s < n && local.str().empty(); ++s) {
      const comm::MessageTime& m = sends[static_cast<std::size_t>(s - 1)];
      const int to = (r + s) % n;
      if (m.bytes != block)
        local << "the message of step " << s << " carried " << m.bytes << " bytes, expected one block of " << count
              << " floats = " << block << " bytes.";
      else if (m.peer != to)
        local << "the message of step " << s << " went to rank " << m.peer << ", expected rank (r+s) mod n = " << to
              << ". At step s every rank sends to r+s and receives from r-s, so each step is a permutation; in rank "
              << "order (0, 1, ...) all ranks would send to the same rank first and queue up there.";
    }
  }
  std::ostringstream measured;
  measured << "rank " << r << (sends.empty() ? " sent nothing" : " sent to ranks");
  for (std::size_t i = 0; i < sends.size(); ++i) measured << (i ? ", " : " ") << sends[i].peer;
  record("measured", measured.str());
  if (!agree_all(local.str().empty())) FAIL() << gather_text(local.str());
}

WB_CHECK(Correctness, AlltoallBruck, .weight = 1,
         .passes = "`alltoall_bruck`, float and int32, blocks of 0, 1, 7, n-1, n+1 and 1 MiB + 3 elements, "
                   "out of place and in place: bit-exact against the library's all-to-all (`MPI_Alltoall`) on "
                   "every rank; out of place, `sendbuf` unchanged",
         .hint = "Rotate (working block i = send block (r+i) mod n), move the blocks with bit k set in "
                 "round k, then recvbuf block j = working block (r-j) mod n.") {
  sweep_alltoall(lab10::alltoall_bruck, "alltoall_bruck");
}

WB_CHECK(Correctness, BruckSendsLogNMessages, .weight = 1,
         .passes = "`alltoall_bruck` of 3-float blocks: each rank sends `ceil(log2 n)` messages (and receives "
                   "as many), round `k`'s to rank `(r+2^k) mod n` carrying `B_k` blocks",
         .hint = "One message per round: pack every working block whose index has bit k set into "
                 "contiguous scratch memory and send it to rank (r + 2^k) mod n.") {
  comm::Communicator& w = world();
  const int n = w.size(), r = w.rank();
  const std::size_t count = 3, block = count * 4;  // small blocks: Bruck's regime
  Messages sends, recvs;
  std::string ni = trace_alltoall(lab10::alltoall_bruck, "alltoall_bruck", count, &sends, &recvs);
  if (!ni.empty()) FAIL() << ni;
  const int rounds = ceil_log2(n);
  const std::size_t want = static_cast<std::size_t>(rounds);
  std::size_t per_block = 0;  // messages if every block went on its own
  for (int k = 0; k < rounds; ++k) per_block += blocks_with_bit(n, k);
  std::ostringstream local;
  if (sends.size() != want) {
    local << "sent " << sends.size() << " messages for an all-to-all over " << n
          << " ranks; Bruck's algorithm sends ceil(log2 n) = " << want << ", one per round";
    if (sends.size() == per_block && per_block != want)
      local << ": that is one message per block; pack all blocks of a round into one contiguous scratch buffer";
    else if (sends.size() == static_cast<std::size_t>(n - 1))
      local << ": that is one message per rank, as in the pairwise exchange";
    local << ".";
  } else if (recvs.size() != want) {
    local << "received " << recvs.size() << " messages, expected ceil(log2 n) = " << want << ", one per round.";
  } else {
    for (int k = 0; k < rounds && local.str().empty(); ++k) {
      const comm::MessageTime& m = sends[static_cast<std::size_t>(k)];
      const int to = (r + (1 << k)) % n;
      const std::size_t blocks = blocks_with_bit(n, k);
      if (m.peer != to)
        local << "the message of round " << k << " went to rank " << m.peer << ", expected rank (r + " << (1 << k)
              << ") mod n = " << to << ": round k sends to the rank 2^k to the right.";
      else if (m.bytes != blocks * block)
        local << "the message of round " << k << " carried " << m.bytes << " bytes, expected " << blocks
              << " blocks of " << block << " bytes = " << blocks * block << ": round k sends every working block "
              << "whose index has bit k set (" << blocks << " of the " << n << " indices).";
    }
  }
  std::ostringstream measured;
  measured << "rank " << r << ": " << sends.size() << (sends.size() == 1 ? " send" : " sends");
  for (std::size_t i = 0; i < sends.size(); ++i) measured << (i ? ", " : " of ") << sends[i].bytes;
  if (!sends.empty()) measured << " bytes";
  record("measured", measured.str());
  if (!agree_all(local.str().empty())) FAIL() << gather_text(local.str());
}

// ---- step 8 ---------------------------------------------------------------------------

WB_CHECK(Analysis, PredictedAlltoallTimesFollowTheModel, .weight = 1,
         .limits = {{"abs_tol", 1e-15}, {"rel_tol", 1e-9}},
         .passes = "`predicted_pairwise_alltoall_time` and `predicted_bruck_alltoall_time` for n = 1, 2, 3, 4, "
                   "5, 7, 8, 16, 24 and blocks of 8 B, 4 KiB and 1 MiB equal the formulas of step 8 within "
                   "{abs_tol} s + a relative {rel_tol}",
         .hint = "Pairwise: (n-1)(alpha + block_bytes beta). Bruck: for each round k < ceil(log2 n), "
                 "alpha + B_k block_bytes beta with B_k the indices in [0, n) with bit k set.") {
  constexpr double kAbsTol = WB_LIMIT("abs_tol"), kRelTol = WB_LIMIT("rel_tol");
  expect_lab_verdict([]() -> std::string {
    const lab10::AlphaBeta m{2e-6, 1e-9};
    auto close = [](double a, double b) { return std::fabs(a - b) <= kAbsTol + kRelTol * std::fabs(b); };
    for (int n : {1, 2, 3, 4, 5, 7, 8, 16, 24})
      for (std::size_t b : {std::size_t(8), std::size_t(4096), std::size_t(1) << 20}) {
        const double pairwise = (n - 1) * (m.alpha + static_cast<double>(b) * m.beta);
        double bruck = 0;
        std::ostringstream blocks;
        for (int k = 0; k < ceil_log2(n); ++k) {
          bruck += m.alpha + static_cast<double>(blocks_with_bit(n, k) * b) * m.beta;
          blocks << (k ? ", " : "") << blocks_with_bit(n, k);
        }
        std::ostringstream s;
        const double got_pairwise = lab10::predicted_pairwise_alltoall_time(m, n, b);
        const double got_bruck = lab10::predicted_bruck_alltoall_time(m, n, b);
        if (!close(got_pairwise, pairwise))
          s << "predicted_pairwise_alltoall_time(n=" << n << ", block_bytes=" << b << ") = " << got_pairwise
            << ", expected (n-1)(alpha + block_bytes beta) = " << pairwise << ": one message of one block to each of "
            << "the n-1 other ranks.";
        else if (!close(got_bruck, bruck))
          s << "predicted_bruck_alltoall_time(n=" << n << ", block_bytes=" << b << ") = " << got_bruck << ", expected "
            << bruck << ": " << ceil_log2(n) << " rounds moving B_k = {" << blocks.str()
            << "} blocks (the indices in [0, n) with bit k set), each round alpha + B_k block_bytes beta.";
        if (!s.str().empty()) return s.str();
      }
    return "";
  });
}

// ---- performance ----------------------------------------------------------------------

WB_CHECK(Performance, PipelinedRingBusbwVsMpiAllreduce, .weight = 2, .ranks = {2, 4},
         .limits = {{"min_busbw_ratio", 0.5}},
         .passes = "`ring_allreduce_pipelined` (default segment size), 16 MiB float sum: busbw >= "
                   "{min_busbw_ratio}x `MPI_Allreduce`'s, measured interleaved in the same run; on a GPU, NOT "
                   "MEASURED where more ranks than GPUs would time-slice one GPU (no CUDA MPS server)",
         .hint = "Use comm.scratch (no allocation per call), keep two segments in flight, try 64 KiB to "
                 "1 MiB segments.") {
  constexpr double kMinBusbwRatio = WB_LIMIT("min_busbw_ratio");
  comm::Communicator& w = world();
  const int n = w.size();
  if (const std::string why = comm::check::not_timed_reason(w); !why.empty()) GTEST_SKIP() << why;
  comm::HarnessOptions o;
  o.min_bytes = o.max_bytes = 16 << 20;
  o.iters = 10;
  o.warmup = 2;
  comm::check::VsLibrary res;
  std::string ni = run_lab_code([&] { res = lab10::timed::pipelined_vs_library(o, lab10::default_segment_bytes, w); },
                                "ring_allreduce_pipelined");
  if (!ni.empty()) FAIL() << ni;
  ASSERT_EQ(res.lab.wrong, 0u) << "the pipelined ring gave wrong results at 16 MiB";
  const double ratio = res.lab.busbw / res.library.busbw;
  const std::string measured = comm::check::ratio_text(res.lab.busbw, res.library.busbw, "GB/s");
  record("measured", measured);
  EXPECT_GE(ratio, kMinBusbwRatio) << "ring_allreduce_pipelined reaches " << measured
                                   << " of MPI_Allreduce's bus bandwidth at 16 MiB float sum with " << n
                                   << " ranks; the goal is " << kMinBusbwRatio << "x. Avoid copies and allocations "
                                   << "inside the loop (use comm.scratch), keep two segments in flight and try "
                                   << "segments of 64 KiB to 1 MiB.";
}
