// Unit tests of common/comm: the communicator, the reduction helper, verifiable inputs and
// the harness. Run under mpirun with several rank counts (see CMakeLists.txt).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "comm/check.h"
#include "comm/error.h"
#include "comm/harness.h"
#include "comm/reduce.h"
#include "comm/verify.h"

using comm::DataType;
using comm::RedOp;
using comm::check::world;

TEST(Communicator, RankAndSizeAreConsistent) {
  comm::Communicator& w = world();
  EXPECT_GE(w.rank(), 0);
  EXPECT_LT(w.rank(), w.size());
  int ranks = w.rank(), sum = 0;
  w.library_allreduce(&ranks, &sum, 1, DataType::i32, RedOp::sum);
  EXPECT_EQ(sum, w.size() * (w.size() - 1) / 2);
  EXPECT_STREQ(w.backend_name(), "mpi");
}

TEST(Communicator, RingExchangeWithNonBlockingCallsDeliversDataAndCounts) {
  comm::Communicator& w = world();
  const int n = w.size(), r = w.rank();
  const std::size_t count = 100000;  // large enough not to go out eagerly
  std::vector<std::int32_t> out(count), in(count, -1);
  std::iota(out.begin(), out.end(), r * 1000000);
  comm::Buffer sb = w.allocate(count * 4), rb = w.allocate(count * 4);
  comm::copy(sb.data(), sb.space(), out.data(), comm::MemorySpace::host, count * 4);
  w.reset_stats();
  std::vector<comm::Request> reqs;
  reqs.push_back(w.irecv(rb.data(), count * 4, (r + n - 1) % n, 5));
  reqs.push_back(w.isend(sb.data(), count * 4, (r + 1) % n, 5));
  EXPECT_EQ(w.stats().pending_recvs, 1);
  EXPECT_EQ(w.stats().pending_sends, 1);
  w.wait_all(reqs);
  EXPECT_FALSE(reqs[0].active());
  EXPECT_EQ(w.stats().pending_recvs, 0);
  EXPECT_EQ(w.stats().sends, 1u);
  EXPECT_EQ(w.stats().bytes_sent, count * 4);
  EXPECT_EQ(w.stats().max_pending_recvs, 1);
  comm::copy(in.data(), comm::MemorySpace::host, rb.data(), rb.space(), count * 4);
  const int left = (r + n - 1) % n;
  for (std::size_t i = 0; i < count; i += 997) ASSERT_EQ(in[i], left * 1000000 + static_cast<int>(i));
}

TEST(Communicator, BlockingSendRecvInRankOrderAndSameTagOrdering) {
  comm::Communicator& w = world();
  const int n = w.size(), r = w.rank();
  if (n == 1) {
    // Self messages: a non-blocking receive then a blocking send to oneself.
    int v = 0, one = 1;
    comm::Request q = w.irecv(&v, sizeof v, 0, 0);
    w.send(&one, sizeof one, 0, 0);
    w.wait(q);
    EXPECT_EQ(v, 1);
    return;
  }
  // Rank 0 sends two messages with one tag to rank 1; they arrive in order.
  if (r == 0) {
    int a = 11, b = 22;
    w.send(&a, sizeof a, 1, 3);
    w.send(&b, sizeof b, 1, 3);
  } else if (r == 1) {
    int a = 0, b = 0;
    w.recv(&a, sizeof a, 0, 3);
    w.recv(&b, sizeof b, 0, 3);
    EXPECT_EQ(a, 11);
    EXPECT_EQ(b, 22);
  }
  w.barrier();
}

TEST(Communicator, RejectsBadPeerTagAndBuffer) {
  comm::Communicator& w = world();
  int v = 0;
  EXPECT_THROW(w.send(&v, sizeof v, w.size(), 0), comm::Error);
  EXPECT_THROW(w.send(&v, sizeof v, -1, 0), comm::Error);
  EXPECT_THROW(w.isend(&v, sizeof v, 0, comm::Communicator::max_tag + 1), comm::Error);
  EXPECT_THROW(w.irecv(nullptr, 4, 0, 0), comm::Error);
  try {
    w.recv(&v, sizeof v, w.size() + 3, 0);
    FAIL() << "no exception";
  } catch (const comm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("communicator.cpp:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is not a rank"), std::string::npos) << e.what();
  }
}

TEST(Communicator, ReductionsOverlappingAPendingReceiveAreCounted) {
  comm::Communicator& w = world();
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1};
  w.reset_stats();
  w.reduce(a, b, 4, DataType::f32, RedOp::sum);
  EXPECT_EQ(w.stats().reductions, 1u);
  EXPECT_EQ(w.stats().reductions_overlapped, 0u);
  int v = 0, one = 1;
  comm::Request q = w.irecv(&v, sizeof v, w.rank(), 9);
  w.reduce(a, b, 4, DataType::f32, RedOp::sum);
  EXPECT_EQ(w.stats().reductions_overlapped, 1u);
  w.send(&one, sizeof one, w.rank(), 9);
  w.wait(q);
  EXPECT_EQ(a[3], 6.0f);
  EXPECT_EQ(w.stats().reduced_elements, 8u);
}

TEST(Communicator, ScratchIsReusedAndGrows) {
  comm::Communicator& w = world();
  void* a = w.scratch(100, 1);
  EXPECT_EQ(w.scratch(50, 1), a);
  void* b = w.scratch(1 << 20, 1);
  ASSERT_NE(b, nullptr);
  std::memset(b, 1, 1 << 20);
  EXPECT_THROW(w.scratch(8, 4), comm::Error);
}

// Throws comm::Error whose message holds every one of `needles`.
template <class F> void expect_error(F&& call, std::initializer_list<const char*> needles) {
  try {
    call();
    ADD_FAILURE() << "no exception";
  } catch (const comm::Error& e) {
    for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(Communicator, BuffersOfPendingRequestsAreNotTouched) {
  comm::Communicator& w = world();
  const int me = w.rank();
  float x[4] = {0, 0, 0, 0}, y[4] = {1, 2, 3, 4};
  comm::Request q = w.irecv(x, 2 * sizeof(float), me, 11);
  // Nothing may read or write a pending receive's bytes.
  expect_error([&] { (void)w.isend(x + 1, sizeof(float), me, 12); },
               {"isend(to rank", "reads bytes that the pending irecv(from rank", "tag 11, 8 bytes) is still receiving into"});
  expect_error([&] { (void)w.irecv(x + 1, sizeof(float), me, 12); }, {"writes bytes that the pending irecv"});
  expect_error([&] { w.copy(y, x, sizeof(float)); }, {"copy(4 bytes) from its source reads"});
  expect_error([&] { w.reduce(x, y, 1, DataType::f32, RedOp::sum); }, {"reduce(count 1) writes"});
  w.copy(x + 2, y, 2 * sizeof(float));  // the bytes after it are free
  w.send(y, 2 * sizeof(float), me, 11);
  w.wait(q);
  EXPECT_EQ(x[1], 2.0f);
  // A pending send's bytes may be read (a second send) but not written.
  comm::Request s1 = w.isend(y, sizeof y, me, 13);
  comm::Request s2 = w.isend(y + 2, 2 * sizeof(float), me, 14);
  expect_error([&] { w.recv(y + 3, sizeof(float), me, 13); },
               {"recv(from rank", "writes bytes that the pending isend(to rank", "is still sending from",
                "wait for the isend first"});
  expect_error([&] { w.copy(y, x, sizeof(float)); }, {"copy(4 bytes) writes"});
  w.copy(x, y, sizeof y);
  float back[4], back2[2];
  w.recv(back, sizeof back, me, 13);
  w.recv(back2, sizeof back2, me, 14);
  w.wait(s1);
  w.wait(s2);
  w.copy(y, x, sizeof y);  // free again
  EXPECT_EQ(back[3], 4.0f);
}

TEST(Communicator, ScratchHoldsTheBytesLastAskedFor) {
  comm::Communicator& w = world();
  char* big = static_cast<char*>(w.scratch(1 << 16, 2));
  char* p = static_cast<char*>(w.scratch(16, 2));  // the same memory, now 16 bytes long
  EXPECT_EQ(p, big);
  char src[32] = {};
  w.copy(p, src, 16);
  expect_error([&] { w.copy(p + 8, src, 12); },
               {"copy(12 bytes) writes bytes [8, 20) of scratch slot 2, which was last asked for 16 bytes "
                "(comm.scratch(16, 2))"});
  expect_error([&] { w.copy(src, p, 17); }, {"reads bytes [0, 17) of scratch slot 2"});
  expect_error([&] { (void)w.irecv(p + 4, 16, w.rank(), 3); }, {"writes bytes [4, 20) of scratch slot 2"});
  expect_error([&] { w.reduce(p, src, 5, DataType::f32, RedOp::sum); }, {"reduce(count 5) writes"});
}

template <class T> void check_reduce_all_ops() {
  const std::size_t n = 1001;  // not a multiple of any vector width
  std::vector<T> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<T>(static_cast<int>(i % 17) - 8);
    b[i] = static_cast<T>(static_cast<int>(i % 5) - 2);
  }
  for (RedOp op : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max}) {
    std::vector<T> x = a;
    comm::reduce_local(x.data(), b.data(), n, comm::data_type_of<T>::value, op);
    for (std::size_t i = 0; i < n; ++i) {
      T want = op == RedOp::sum ? a[i] + b[i] : op == RedOp::prod ? a[i] * b[i]
             : op == RedOp::min ? std::min(a[i], b[i]) : std::max(a[i], b[i]);
      ASSERT_EQ(x[i], want) << comm::name_of(op) << " at " << i;
    }
  }
}
TEST(Reduce, AllOperatorsAllTypesOnHost) {
  check_reduce_all_ops<float>();
  check_reduce_all_ops<double>();
  check_reduce_all_ops<std::int32_t>();
}

TEST(Reduce, Int32SumWrapsLikeMpi) {
  std::int32_t a = 2147483647, b = 1;
  comm::reduce_local(&a, &b, 1, DataType::i32, RedOp::sum);
  EXPECT_EQ(a, -2147483647 - 1);
}

TEST(Reduce, DeviceMemoryWithoutCudaIsAClearError) {
  if (comm::built_with_cuda()) GTEST_SKIP() << "this build has CUDA";
  float a = 1, b = 2;
  try {
    comm::reduce_local(&a, &b, 1, DataType::f32, RedOp::sum, comm::MemorySpace::device);
    FAIL() << "no exception";
  } catch (const comm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA"), std::string::npos) << e.what();
  }
}

// Verifiable sums are exact whatever the order of the additions.
template <class T> void check_order_independent(int nranks) {
  const std::size_t count = 4096;
  std::vector<T> expect(count);
  comm::expected_allreduce(expect.data(), nullptr, count, comm::data_type_of<T>::value, comm::DataMode::verifiable,
                           RedOp::sum, nranks, 3);
  for (std::size_t i = 0; i < count; ++i) {
    T backward = comm::input_value<T>(comm::DataMode::verifiable, RedOp::sum, nranks, nranks - 1, i, 3);
    for (int r = nranks - 2; r >= 0; --r)
      backward = backward + comm::input_value<T>(comm::DataMode::verifiable, RedOp::sum, nranks, r, i, 3);
    // pairwise: (0+2+4..) + (1+3+5..)
    T even = 0, odd = 0;
    for (int r = 0; r < nranks; ++r)
      (r % 2 ? odd : even) += comm::input_value<T>(comm::DataMode::verifiable, RedOp::sum, nranks, r, i, 3);
    ASSERT_EQ(backward, expect[i]) << i;
    ASSERT_EQ(even + odd, expect[i]) << i;
  }
}
TEST(Verify, VerifiableSumsAreExactInAnyOrder) {
  for (int n : {1, 2, 3, 5, 8, 64, 1000}) {
    check_order_independent<float>(n);
    check_order_independent<double>(n);
  }
}

TEST(Verify, VerifiableValuesAreNotTrivial) {
  // Inputs differ across ranks and elements (a constant input would hide misplaced data).
  std::vector<float> a(64), b(64);
  comm::fill_input(a.data(), 64, DataType::f32, comm::DataMode::verifiable, RedOp::sum, 4, 0, 1);
  comm::fill_input(b.data(), 64, DataType::f32, comm::DataMode::verifiable, RedOp::sum, 4, 1, 1);
  int same_rank = 0, distinct = 0;
  for (int i = 0; i < 64; ++i) {
    same_rank += a[i] == b[i];
    distinct += i > 0 && a[i] != a[i - 1];
  }
  EXPECT_LT(same_rank, 4);
  EXPECT_GT(distinct, 56);
}

TEST(Verify, RandomDataToleranceAcceptsReorderedSumsAndRejectsWrongOnes) {
  const int nranks = 8;
  const std::size_t count = 2000;
  std::vector<float> expect(count), reordered(count), wrong(count);
  std::vector<double> tol;
  comm::expected_allreduce(expect.data(), &tol, count, DataType::f32, comm::DataMode::random, RedOp::sum, nranks, 5);
  ASSERT_EQ(tol.size(), count);
  for (std::size_t i = 0; i < count; ++i) {
    float s = 0;
    for (int r = nranks - 1; r >= 0; --r) s += comm::input_value<float>(comm::DataMode::random, RedOp::sum, nranks, r, i, 5);
    reordered[i] = s;
    // One rank's contribution missing.
    wrong[i] = s - comm::input_value<float>(comm::DataMode::random, RedOp::sum, nranks, 3, i, 5);
  }
  EXPECT_EQ(comm::count_wrong(reordered.data(), expect.data(), &tol, count, DataType::f32), 0u);
  comm::Mismatch m;
  EXPECT_GT(comm::count_wrong(wrong.data(), expect.data(), &tol, count, DataType::f32, &m), count * 9 / 10);
}

TEST(Verify, CountWrongIsBitExactWithoutTolerance) {
  float a[3] = {1.0f, 2.0f, 3.0f}, b[3] = {1.0f, std::nextafter(2.0f, 3.0f), NAN};
  comm::Mismatch m;
  EXPECT_EQ(comm::count_wrong(b, a, nullptr, 3, DataType::f32, &m), 2u);
  EXPECT_EQ(m.index, 1u);
}

TEST(Harness, ParsesNcclTestsFlags) {
  const char* argv[] = {"x", "-b", "8", "-e", "64M", "-f", "4", "-n", "7", "-w", "2", "-c", "0", "-d", "double",
                        "-o", "max", "--data", "random", "--unknown"};
  std::vector<std::string> rest;
  comm::HarnessOptions o = comm::parse_harness_options(20, const_cast<char**>(argv), &rest);
  EXPECT_EQ(o.min_bytes, 8u);
  EXPECT_EQ(o.max_bytes, 64u << 20);
  EXPECT_EQ(o.step_factor, 4.0);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmup, 2);
  EXPECT_FALSE(o.check);
  EXPECT_EQ(o.type, DataType::f64);
  EXPECT_EQ(o.op, RedOp::max);
  EXPECT_EQ(o.data, comm::DataMode::random);
  EXPECT_EQ(rest, std::vector<std::string>{"--unknown"});
  const char* bad[] = {"x", "-e", "12Q"};
  EXPECT_THROW(comm::parse_harness_options(3, const_cast<char**>(bad), nullptr), comm::Error);
}

TEST(Harness, SweepSizesFollowFactorAndStep) {
  comm::HarnessOptions o;
  o.min_bytes = 8;
  o.max_bytes = 1024;
  o.step_factor = 2;
  EXPECT_EQ(comm::sweep_sizes(o), (std::vector<std::size_t>{8, 16, 32, 64, 128, 256, 512, 1024}));
  o.step_bytes = 400;
  EXPECT_EQ(comm::sweep_sizes(o), (std::vector<std::size_t>{8, 408, 808, 1024}));
  EXPECT_DOUBLE_EQ(comm::allreduce_bus_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(comm::allreduce_bus_factor(1), 0.0);
}

TEST(Harness, LibraryIsCorrectAndABrokenImplementationIsCounted) {
  comm::Communicator& w = world();
  comm::HarnessOptions o;
  o.min_bytes = 4;
  o.max_bytes = 4096 + 12;
  o.step_factor = 8;
  o.iters = 3;
  o.warmup = 1;
  comm::Implementation broken{"copy", [](const void* s, void* r, std::size_t c, DataType t, RedOp, comm::Communicator& cm) {
                                if (s != r) cm.copy(r, s, c * comm::size_of(t));  // no reduction at all
                              }};
  auto res = comm::run_allreduce_sweep(w, {comm::library_implementation(w), broken}, o, nullptr);
  ASSERT_EQ(res.size() % 2, 0u);
  for (const auto& r : res) {
    EXPECT_GT(r.out_of_place.time_us, 0.0);
    if (r.impl == "mpi") {
      EXPECT_EQ(r.out_of_place.wrong, 0u);
      EXPECT_EQ(r.in_place.wrong, 0u);
    } else if (w.size() > 1 && r.count > 0) {
      EXPECT_GT(r.out_of_place.wrong, 0u) << r.bytes;
      EXPECT_GT(r.in_place.wrong, 0u) << r.bytes;
    }
  }
}

TEST(Check, DiagnosisNamesAMissingAllGather) {
  comm::Communicator& w = world();
  if (w.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Reduce-scatter by the library's all-reduce, then keep only chunk `rank`: the result an
  // implementation without all-gather leaves behind.
  comm::AllreduceFn no_allgather = [](const void* s, void* r, std::size_t c, DataType t, RedOp op,
                                      comm::Communicator& cm) {
    comm::check::Unrecorded from_the_library_on_purpose;
    const std::size_t e = comm::size_of(t);
    std::vector<char> full(c * e);
    cm.library_allreduce(s, full.data(), c, t, op);
    if (s != r) cm.copy(r, s, c * e);
    auto own = comm::check::reference_chunk(c, cm.size(), cm.rank());
    std::memcpy(static_cast<char*>(r) + own.offset * e, full.data() + own.offset * e, own.count * e);
  };
  std::string d = comm::check::check_allreduce(no_allgather, 1000, DataType::f32, RedOp::sum, false);
  EXPECT_NE(d.find("all-gather phase is missing"), std::string::npos) << d;
}

namespace {

// The result of `kind` on rank `rank` by its definition, from every rank's send buffer
// (int32, so sums are exact): what every library collective must give.
std::vector<std::int32_t> defined_result(comm::Collective kind, std::size_t count, int n, int rank, int root,
                                         const std::vector<std::vector<std::int32_t>>& send) {
  using comm::Collective;
  std::vector<std::int32_t> out;
  auto sum_of = [&](std::size_t i) {
    std::int32_t s = 0;
    for (int q = 0; q < n; ++q) s += send[q][i];
    return s;
  };
  switch (kind) {
    case Collective::allreduce:
    case Collective::reduce:
      for (std::size_t i = 0; i < count; ++i) out.push_back(sum_of(i));
      break;
    case Collective::broadcast: out = send[root]; break;
    case Collective::allgather:
    case Collective::gather:
      for (int q = 0; q < n; ++q) out.insert(out.end(), send[q].begin(), send[q].end());
      break;
    case Collective::reduce_scatter:
      for (std::size_t i = 0; i < count; ++i) out.push_back(sum_of(rank * count + i));
      break;
    case Collective::scatter:
      out.assign(send[root].begin() + rank * count, send[root].begin() + (rank + 1) * count);
      break;
    case Collective::alltoall:
      for (int q = 0; q < n; ++q)
        out.insert(out.end(), send[q].begin() + rank * count, send[q].begin() + (rank + 1) * count);
      break;
  }
  return out;
}

const comm::Collective kAllCollectives[] = {
    comm::Collective::allreduce, comm::Collective::broadcast, comm::Collective::reduce,
    comm::Collective::allgather, comm::Collective::reduce_scatter, comm::Collective::gather,
    comm::Collective::scatter,   comm::Collective::alltoall};

}  // namespace

TEST(Library, EveryCollectiveMatchesItsDefinitionInAndOutOfPlace) {
  using comm::Collective;
  comm::Communicator& w = world();
  const int n = w.size(), r = w.rank();
  const std::size_t nn = static_cast<std::size_t>(n);
  for (Collective kind : kAllCollectives) {
    for (std::size_t count : {std::size_t(1), std::size_t(5), std::size_t(1000)}) {
      const bool per_rank = kind == Collective::reduce_scatter || kind == Collective::scatter ||
                            kind == Collective::alltoall;
      const std::size_t send_n = per_rank ? count * nn : count;
      const bool gathers = kind == Collective::allgather || kind == Collective::gather || kind == Collective::alltoall;
      const std::size_t recv_n = gathers ? count * nn : count;
      std::vector<std::vector<std::int32_t>> send(nn, std::vector<std::int32_t>(send_n));
      for (int q = 0; q < n; ++q)
        for (std::size_t i = 0; i < send_n; ++i) send[q][i] = q * 100000 + static_cast<std::int32_t>(i);
      for (int root : comm::check::sweep_roots(n)) {
        for (bool in_place : {false, true}) {
          const bool root_here = r == root;
          const bool has_result = !(kind == Collective::reduce || kind == Collective::gather) || root_here;
          std::vector<std::int32_t> got(recv_n, -1);
          if (!in_place || ((kind == Collective::gather || kind == Collective::scatter) && !root_here)) {
            std::vector<std::int32_t> sb = send[r];
            w.library({kind, sb.data(), got.data(), count, DataType::i32, RedOp::sum, root});
            EXPECT_EQ(sb, send[r]) << comm::name_of(kind) << ": out of place leaves the send buffer";
          } else {
            std::vector<std::int32_t> one(std::max(send_n, recv_n), -1);
            std::int32_t* s = one.data();
            std::int32_t* d = one.data();
            if (kind == Collective::allgather || kind == Collective::gather) s += r * count;
            if (kind == Collective::reduce_scatter || kind == Collective::scatter) d += r * count;
            std::copy(send[r].begin(), send[r].end(), s);
            w.library({kind, s, d, count, DataType::i32, RedOp::sum, root});
            std::copy(d, d + recv_n, got.begin());
          }
          if (has_result)
            EXPECT_EQ(got, defined_result(kind, count, n, r, root, send))
                << comm::name_of(kind) << " count " << count << " root " << root << (in_place ? " in place" : "");
        }
      }
    }
  }
}

TEST(Check, CollectiveCheckPassesTheLibraryAndNamesMistakes) {
  using comm::Collective;
  comm::Communicator& w = world();
  const int n = w.size();
  for (Collective kind : kAllCollectives) {
    comm::check::CollectiveFn fn = [kind](const void* s, void* r, std::size_t c, DataType t, RedOp op, int root,
                                          comm::Communicator& cm) {
      comm::check::Unrecorded from_the_library_on_purpose;
      cm.library({kind, s, r, c, t, op, root});
    };
    std::size_t cases = 0;
    EXPECT_EQ(comm::check::sweep_collective(fn, kind, DataType::f32, RedOp::sum, &cases), "") << comm::name_of(kind);
    EXPECT_GT(cases, 0u);
  }
  if (n < 2) return;
  // A broadcast that never sends: the other ranks' buffers keep their 0xff bytes.
  comm::check::CollectiveFn lazy = [](const void* s, void* r, std::size_t c, DataType t, RedOp, int root,
                                      comm::Communicator& cm) {
    if (cm.rank() == root && s != r) cm.copy(r, s, c * comm::size_of(t));
  };
  std::string d = comm::check::check_collective(lazy, {Collective::broadcast, 10, DataType::f32, RedOp::sum, 0, false});
  EXPECT_NE(d.find("broadcast of 10 float from root 0 (out of place"), std::string::npos) << d;
  EXPECT_NE(d.find("never written"), std::string::npos) << d;
  // A gather that puts every rank's block in the slot of the next rank.
  comm::check::CollectiveFn shifted = [](const void* s, void* r, std::size_t c, DataType t, RedOp, int root,
                                         comm::Communicator& cm) {
    comm::check::Unrecorded from_the_library_on_purpose;
    const std::size_t b = c * comm::size_of(t);
    const int n = cm.size();
    std::vector<char> all(b * static_cast<std::size_t>(n));
    cm.library_gather(s, all.data(), c, t, root);
    if (cm.rank() == root)
      for (int q = 0; q < n; ++q) std::memcpy(static_cast<char*>(r) + ((q + 1) % n) * b, all.data() + q * b, b);
  };
  d = comm::check::check_collective(shifted, {Collective::gather, 3, DataType::i32, RedOp::sum, n - 1, false});
  EXPECT_NE(d.find("first at index 0 (block 0: element 0 of rank 0's sendbuf)"), std::string::npos) << d;
  EXPECT_NE(d.find("which is rank " + std::to_string(n - 1) + "'s send element 0"), std::string::npos) << d;
  // A reduce that writes partial sums into every rank's receive buffer.
  comm::check::CollectiveFn scribbles = [](const void* s, void* r, std::size_t c, DataType t, RedOp op, int root,
                                           comm::Communicator& cm) {
    comm::check::Unrecorded from_the_library_on_purpose;
    cm.library_allreduce(s, r, c, t, op);
    (void)root;
  };
  // A reduce that leaves out the root's own contribution.
  comm::check::CollectiveFn no_root = [](const void* s, void* r, std::size_t c, DataType t, RedOp op, int root,
                                         comm::Communicator& cm) {
    comm::check::Unrecorded from_the_library_on_purpose;
    std::vector<char> zero(c * comm::size_of(t), 0);
    cm.library_reduce(cm.rank() == root ? zero.data() : s, r, c, t, op, root);
  };
  d = comm::check::check_collective(no_root, {Collective::reduce, 4, DataType::i32, RedOp::sum, 1, false});
  EXPECT_NE(d.find("the reduction over every rank but rank 1 (its contribution is missing)"), std::string::npos) << d;
  d = comm::check::check_collective(scribbles, {Collective::reduce, 4, DataType::f64, RedOp::max, 0, false});
  EXPECT_NE(d.find("(not the root) was written"), std::string::npos) << d;
}

// The learner-call guard: library collectives and raw MPI calls made inside a LearnerCall are
// named with their counts; the communicator's own traffic, calls outside every window and calls
// in an Unrecorded scope are not.
TEST(Check, LearnerCallNamesLibraryCollectivesAndRawMpiCalls) {
  comm::Communicator& w = world();
  const int n = w.size(), r = w.rank();
  int one = 1, sum = 0, got = -1;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);  // no window open
  {
    comm::check::LearnerCall window("a ring exchange");
    std::vector<comm::Request> reqs;
    reqs.push_back(w.irecv(&got, sizeof got, (r + n - 1) % n, 3));
    reqs.push_back(w.isend(&r, sizeof r, (r + 1) % n, 3));
    w.wait_all(reqs);
    w.barrier();
    {
      comm::check::Unrecorded quiet;
      w.library_allreduce(&one, &sum, 1, DataType::i32, RedOp::sum);
      MPI_Barrier(MPI_COMM_WORLD);
    }
    EXPECT_EQ(window.close(), "");
  }
  EXPECT_EQ(got, (r + n - 1) % n);
  {
    comm::check::LearnerCall window("ring_allreduce");
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    w.library_broadcast(&one, &one, 1, DataType::i32, 0);
    const std::string m = window.close();
    EXPECT_NE(m.find("ring_allreduce called MPI_Allreduce (2 calls) and comm.library_broadcast (1 call); this lab "
                     "asks for hand-written communication"),
              std::string::npos)
        << m;
    EXPECT_EQ(window.close(), "");
  }
  {
    // A window opened inside another hides nothing from it.
    comm::check::LearnerCall outer("outer");
    {
      comm::check::LearnerCall inner("inner");
      MPI_Barrier(MPI_COMM_WORLD);
      EXPECT_NE(inner.close().find("inner called MPI_Barrier (1 call);"), std::string::npos);
    }
    EXPECT_NE(outer.close().find("outer called MPI_Barrier (1 call);"), std::string::npos);
  }
  // The check helpers turn a recorded call into the failure on every rank.
  std::string f = comm::check::run_lab_code(
      [&] {
        if (r == 0) MPI_Sendrecv(&one, 1, MPI_INT, 0, 9, &got, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      },
      "pingpong");
  EXPECT_EQ(f.find("rank 0: pingpong called MPI_Sendrecv (1 call);"), 0u) << f;
  comm::AllreduceFn library = [](const void* s, void* rb, std::size_t c, DataType t, RedOp op, comm::Communicator& cm) {
    cm.library_allreduce(s, rb, c, t, op);
  };
  f = comm::check::check_allreduce(library, 7, DataType::f32, RedOp::sum, false, comm::DataMode::verifiable, 7,
                                   "ring_allreduce");
  EXPECT_NE(f.find(": all-reduce of 7 float with sum (out of place, " + std::to_string(n) +
                   " ranks): ring_allreduce called comm.library_allreduce (1 call);"),
            std::string::npos)
      << f;
  comm::check::CollectiveFn bcast = [](const void* s, void* rb, std::size_t c, DataType t, RedOp, int root,
                                       comm::Communicator& cm) {
    if (cm.rank() == root && s != rb) std::memcpy(rb, s, c * comm::size_of(t));
    MPI_Bcast(rb, static_cast<int>(c), MPI_FLOAT, root, MPI_COMM_WORLD);
  };
  f = comm::check::check_collective(bcast, {comm::Collective::broadcast, 5, DataType::f32, RedOp::sum, 0, false});
  EXPECT_NE(f.find("the lab's broadcast called MPI_Bcast (1 call);"), std::string::npos) << f;
}

TEST(Harness, EveryCollectiveSweepsWithBusFactorsAndCountsWrongElements) {
  using comm::Collective;
  comm::Communicator& w = world();
  const int n = w.size();
  comm::HarnessOptions o;
  o.min_bytes = 64;
  o.max_bytes = 64 * 1024;
  o.step_factor = 32;
  o.iters = 2;
  o.warmup = 1;
  o.root = n - 1;
  EXPECT_DOUBLE_EQ(comm::bus_factor(Collective::broadcast, 4), 1.0);
  EXPECT_DOUBLE_EQ(comm::bus_factor(Collective::alltoall, 4), 0.75);
  EXPECT_DOUBLE_EQ(comm::bus_factor(Collective::allreduce, 4), 1.5);
  EXPECT_EQ(comm::collective_bytes(Collective::gather, 10, DataType::f32, 4), 160u);
  for (Collective kind : {Collective::broadcast, Collective::reduce, Collective::allgather, Collective::reduce_scatter,
                          Collective::gather, Collective::scatter, Collective::alltoall}) {
    // The library, and a version that leaves recvbuf as it was.
    comm::CollectiveImplementation idle{"idle", [](const void*, void*, std::size_t, DataType, RedOp, int,
                                                   comm::Communicator&) {}};
    auto res = comm::run_collective_sweep(w, kind, {comm::library_implementation(w, kind), idle}, o, nullptr);
    ASSERT_FALSE(res.empty()) << comm::name_of(kind);
    for (const auto& r : res) {
      EXPECT_EQ(r.bytes % (comm::collective_bytes(kind, 1, DataType::f32, n)), 0u);
      if (r.impl == "mpi") {
        EXPECT_EQ(r.out_of_place.wrong, 0u) << comm::name_of(kind) << " " << r.bytes;
        EXPECT_EQ(r.in_place.wrong, 0u) << comm::name_of(kind) << " " << r.bytes;
        EXPECT_NEAR(r.out_of_place.busbw, r.out_of_place.algbw * comm::bus_factor(kind, n), 1e-9);
      } else if (n > 1) {
        EXPECT_GT(r.out_of_place.wrong, 0u) << comm::name_of(kind) << " " << r.bytes;
      }
    }
  }
}

// ---- GPU sharing: when device-buffer timings mean something -----------------------------------------

TEST(GpuSharing, DeviceTimingsNeedAGpuPerRankOrMps) {
  using comm::MemorySpace;
  using comm::check::GpuSharing;
  using comm::check::shared_gpu_reason;
  EXPECT_EQ(shared_gpu_reason(GpuSharing{4, 4, false, 16}, MemorySpace::device), "");
  EXPECT_EQ(shared_gpu_reason(GpuSharing{2, 8, false, 16}, MemorySpace::device), "");
  EXPECT_EQ(shared_gpu_reason(GpuSharing{4, 1, true, 16}, MemorySpace::device), "") << "MPS runs them side by side";
  EXPECT_EQ(shared_gpu_reason(GpuSharing{4, 1, false, 16}, MemorySpace::host), "") << "host buffers";
  EXPECT_EQ(shared_gpu_reason(GpuSharing{4, 0, false, 16}, MemorySpace::host), "") << "sim: no GPU";
  const std::string one = shared_gpu_reason(GpuSharing{4, 1, false, 16}, MemorySpace::device);
  EXPECT_NE(one.find("4 ranks would share 1 GPU"), std::string::npos) << one;
  EXPECT_NE(one.find("nvidia-cuda-mps-control -d"), std::string::npos) << one;
  const std::string two = shared_gpu_reason(GpuSharing{8, 2, false, 16}, MemorySpace::device);
  EXPECT_NE(two.find("8 ranks would share 2 GPUs"), std::string::npos) << two;
}

TEST(GpuSharing, FactsCanBeFakedAndEveryRankHasTheSame) {
  comm::Communicator& w = comm::check::world();
  ::setenv("WB_FAKE_GPUS", "1", 1);
  ::setenv("WB_FAKE_MPS", "0", 1);
  const comm::check::GpuSharing s = comm::check::gpu_sharing(w);
  ::setenv("WB_FAKE_MPS", "1", 1);
  const bool mps = comm::check::gpu_sharing(w).mps;
  ::unsetenv("WB_FAKE_GPUS");
  ::unsetenv("WB_FAKE_MPS");
  EXPECT_EQ(s.ranks_on_node, w.size()) << "every rank of this test runs on one node";
  EXPECT_EQ(s.gpus, 1);
  EXPECT_FALSE(s.mps);
  EXPECT_TRUE(mps);
  EXPECT_GE(s.cores, 1);
  const std::string why = comm::check::shared_gpu_reason(s, comm::MemorySpace::device);
  EXPECT_EQ(why.empty(), w.size() == 1) << why;
}

TEST(GpuSharing, SlownessNamesTheCauseItObserved) {
  using comm::MemorySpace;
  using comm::check::GpuSharing;
  using comm::check::observed_slowness_cause;
  const std::string gpu = observed_slowness_cause(GpuSharing{4, 1, false, 16}, MemorySpace::device);
  EXPECT_NE(gpu.find("the cause: 4 ranks would share 1 GPU"), std::string::npos) << gpu;
  // This thread is running while it reads /proc/loadavg: at least one runnable thread, more than 0 cores.
  const std::string cpu = observed_slowness_cause(GpuSharing{2, 0, false, 0}, MemorySpace::host);
  EXPECT_NE(cpu.find("the cause: the CPU was oversubscribed"), std::string::npos) << cpu;
  const std::string neither = observed_slowness_cause(GpuSharing{2, 0, false, 1 << 20}, MemorySpace::host);
  EXPECT_NE(neither.find("neither a shared GPU nor a busy CPU explains it"), std::string::npos) << neither;
}
