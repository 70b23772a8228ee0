#include "comm/check.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#ifdef COMM_WITH_CUDA
#include <cuda_runtime.h>
#endif
#include <sched.h>
#include <sys/stat.h>

#include "comm/error.h"
#include "comm/mpi_communicator.h"
#include "comm/nccl_communicator.h"
#include "comm/reduce.h"
#include "comm/status.h"

namespace comm::check {
namespace {

std::unique_ptr<Communicator> g_world;

std::string json_escape(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o;
}

// Keeps the status record current and, on rank 0, appends one JSON line per finished test
// to <status dir>/results.jsonl, so results survive a later test that hangs or crashes.
class StatusListener : public ::testing::EmptyTestEventListener {
 public:
  explicit StatusListener(int rank) : rank_(rank) {}
  void OnTestStart(const ::testing::TestInfo& info) override {
    status::set_test(std::string(info.test_suite_name()) + "." + info.name());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    status::set_activity("finished %s.%s", info.test_suite_name(), info.name());
    if (rank_ != 0 || status::directory().empty()) return;
    const ::testing::TestResult& r = *info.result();
    std::string message;
    for (int i = 0; i < r.total_part_count(); ++i) {
      const auto& part = r.GetTestPartResult(i);
      if (part.failed() || part.skipped()) {
        if (!message.empty()) message += "\n";
        message += part.message();
      }
    }
    std::string line = "{\"name\": \"" + json_escape(std::string(info.test_suite_name()) + "." + info.name()) +
                       "\", \"status\": \"" + (r.Failed() ? "failed" : r.Skipped() ? "skipped" : "passed") +
                       "\", \"time_ms\": " + std::to_string(r.elapsed_time()) + ", \"message\": \"" +
                       json_escape(message) + "\"";
    for (int i = 0; i < r.test_property_count(); ++i) {
      const auto& p = r.GetTestProperty(i);
      line += ", \"" + json_escape(p.key()) + "\": \"" + json_escape(p.value()) + "\"";
    }
    line += "}\n";
    if (FILE* f = std::fopen((status::directory() + "/results.jsonl").c_str(), "a")) {
      std::fputs(line.c_str(), f);
      std::fclose(f);
    }
  }

 private:
  int rank_;
};

std::string describe(DataType type, RedOp op, std::size_t count, bool in_place, int n) {
  std::ostringstream s;
  s << "all-reduce of " << count << " " << name_of(type) << " with " << name_of(op) << " ("
    << (in_place ? "in place" : "out of place") << ", " << n << " ranks)";
  return s.str();
}

std::string range_text(Range r) {
  std::ostringstream s;
  s << "[" << r.offset << ", " << r.offset + r.count << ")";
  return s.str();
}

int chunk_containing(std::size_t count, int n, std::size_t i) {
  for (int c = 0; c < n; ++c) {
    Range r = reference_chunk(count, n, c);
    if (i >= r.offset && i < r.offset + r.count) return c;
  }
  return -1;
}

// Runs fn out of place on inputs input(rank, i) and returns the host copy of the output.
template <class T, class Input>
std::vector<T> run_probe(const AllreduceFn& fn, std::size_t count, RedOp op, Input input) {
  Communicator& w = world();
  const std::size_t bytes = count * sizeof(T);
  std::vector<T> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = input(w.rank(), i);
  Buffer send = w.allocate(bytes), recv = w.allocate(bytes);
  copy(send.data(), send.space(), host.data(), MemorySpace::host, bytes);
  fill_bytes(recv.data(), recv.space(), 0xff, bytes);
  fn(send.data(), recv.data(), count, data_type_of<T>::value, op, w);
  copy(host.data(), MemorySpace::host, recv.data(), recv.space(), bytes);
  return host;
}

template <class T> bool untouched(T v) {
  T pattern;
  std::memset(&pattern, 0xff, sizeof pattern);
  return std::memcmp(&v, &pattern, sizeof v) == 0;
}

template <class T> std::string diagnose_typed(const AllreduceFn& fn, std::size_t count) {
  Communicator& w = world();
  const int n = w.size(), r = w.rank();
  std::ostringstream why;
  if (count == 0) return "";

  // Probe 1: every rank contributes 1, sum: each element must count exactly n contributions.
  auto ones = run_probe<T>(fn, count, RedOp::sum, [](int, std::size_t) { return T(1); });
  std::size_t first_extra = count, first_missing = count, first_untouched = count, missing = 0;
  bool own_chunk_complete = true, others_all_partial = true;
  const Range own = reference_chunk(count, n, r);
  for (std::size_t i = 0; i < count; ++i) {
    const bool in_own = i >= own.offset && i < own.offset + own.count;
    if (untouched(ones[i])) {
      if (first_untouched == count) first_untouched = i;
    } else if (ones[i] > T(n)) {
      if (first_extra == count) first_extra = i;
    } else if (ones[i] < T(n)) {
      if (first_missing == count) first_missing = i;
      ++missing;
    }
    const bool complete = ones[i] == T(n);
    if (in_own && !complete) own_chunk_complete = false;
    if (!in_own && complete) others_all_partial = false;
  }
  bool divisible_ok = true;
  const bool probe1_bad = first_extra < count || first_missing < count || first_untouched < count;
  if (count % static_cast<std::size_t>(n) != 0) {
    // Same probe on a multiple of n: a remainder bug passes there and fails here.
    std::size_t m = std::max<std::size_t>(1, count / static_cast<std::size_t>(n)) * static_cast<std::size_t>(n);
    auto even = run_probe<T>(fn, m, RedOp::sum, [](int, std::size_t) { return T(1); });
    for (std::size_t i = 0; i < m; ++i)
      if (!(even[i] == T(n))) divisible_ok = false;
    if (!agree_all(divisible_ok)) divisible_ok = false;
  }
  const bool any_bad1 = !agree_all(!probe1_bad);
  if (any_bad1 && divisible_ok && count % static_cast<std::size_t>(n) != 0) {
    why << "the result is right when count is a multiple of " << n << " but wrong for count = " << count
        << " (count % n = " << count % static_cast<std::size_t>(n) << "): chunk offsets or sizes do not handle the "
        << "remainder. Chunk c must start at c*(count/n) + min(c, count%n) and hold count/n elements, plus one "
        << "for the first count%n chunks.";
    std::size_t bad = std::min({first_extra, first_missing, first_untouched});
    if (bad < count)
      why << " First wrong element of the probe (every rank contributes 1, sum): " << bad << " (chunk "
          << chunk_containing(count, n, bad) << ").";
    return why.str();
  }
  if (any_bad1) {
    // Every rank returns here (the probes below are collective); ranks whose own output
    // looked right return an empty diagnosis.
    if (first_untouched < count) {
      why << "element " << first_untouched << " (chunk " << chunk_containing(count, n, first_untouched)
          << ") of the output was never written.";
    } else if (first_extra < count) {
      why << "every rank contributed 1 and the operator was sum, so each element must be " << n << ", but element "
          << first_extra << " is " << static_cast<double>(ones[first_extra])
          << ": some contributions were counted more than once. Is a reduction applied twice (for example "
          << "reducing a received segment again), or a reduction done where the all-gather phase should only copy?";
    } else if (first_missing < count) {
      if (n > 1 && own_chunk_complete && others_all_partial) {
        why << "only chunk " << r << " " << range_text({own.offset, own.count}) << " is fully reduced on rank " << r
            << "; every other chunk holds a partial result (element " << first_missing << " counts "
            << static_cast<double>(ones[first_missing]) << " of " << n
            << " contributions): the all-gather phase is missing. After the reduce-scatter each rank must pass "
            << "its reduced chunk around the ring n-1 times.";
      } else {
        why << "element " << first_missing << " (chunk " << chunk_containing(count, n, first_missing) << ") counts "
            << static_cast<double>(ones[first_missing]) << " of " << n << " contributions (" << missing
            << " elements short): some rank's contribution never reached it.";
      }
    }
    return why.str();
  }

  // Probe 2: every rank contributes its element index; max and min must return the index.
  // A different value names the element whose data landed here.
  if (count < (std::size_t(1) << 24)) {
    for (RedOp op : {RedOp::max, RedOp::min}) {
      auto idx = run_probe<T>(fn, count, op, [](int, std::size_t i) { return static_cast<T>(i); });  // collective
      for (std::size_t i = 0; i < count && why.str().empty(); ++i) {
        if (!(idx[i] == static_cast<T>(i))) {
          why << "element " << i << " holds the data of element " << static_cast<double>(idx[i])
              << " (probe: every rank contributes the element index, " << name_of(op)
              << "): data landed at the wrong offset. Check segment and chunk offsets, and that sender and "
              << "receiver agree on which segment each tag names (tags mixed up between pipelined segments "
              << "deliver one segment's data into another's buffer).";
        }
      }
    }
  }
  return why.str();
}

}  // namespace

Communicator& world() {
  if (!g_world) COMM_THROW("comm::check::world() used outside run_all_tests()");
  return *g_world;
}

namespace {

// Completes `request`, sleeping between tests once it has not completed at once. A rank that
// reaches one of the checks' agreements early would otherwise spin in MPI until the last rank
// arrives, taking a core from the ranks still running the lab's code (eight ranks share two
// cores on a laptop; in a split build they are other processes).
void wait_sleeping(MPI_Request* request) {
  int done = 0;
  for (int i = 0;; ++i) {
    PMPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (i < 16) continue;
    const long us = std::min(500L, 10L << std::min(i - 16, 6));
    timespec t{0, us * 1000};
    nanosleep(&t, nullptr);
  }
}

}  // namespace

bool agree_all(bool ok) {
  int local = ok ? 1 : 0, all = 0;
  MPI_Request request;
  PMPI_Iallreduce(&local, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD, &request);
  wait_sleeping(&request);
  return all != 0;
}

std::string gather_text(const std::string& text) {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int len = static_cast<int>(text.size());
  std::vector<int> lens(n), offs(n);
  MPI_Request request;
  PMPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD, &request);
  wait_sleeping(&request);
  int total = 0;
  for (int i = 0; i < n; ++i) {
    offs[i] = total;
    total += lens[i];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  PMPI_Iallgatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, MPI_COMM_WORLD,
                   &request);
  wait_sleeping(&request);
  // Ranks with the same text share one line ("ranks 0, 2, 3: ...").
  std::vector<std::pair<std::string, std::string>> groups;  // text, rank list
  for (int i = 0; i < n; ++i) {
    if (lens[i] == 0) continue;
    std::string t = all.substr(static_cast<std::size_t>(offs[i]), static_cast<std::size_t>(lens[i]));
    while (!t.empty() && t.back() == '\n') t.pop_back();  // one line break per group, added below
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == t; });
    if (it == groups.end())
      groups.push_back({t, std::to_string(i)});
    else
      it->second += ", " + std::to_string(i);
  }
  std::string out;
  for (const auto& [t, ranks] : groups)
    out += (ranks.find(',') == std::string::npos ? "rank " : "ranks ") + ranks + ": " + t + "\n";
  return out;
}

void guarded(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::string what = e.what();
    if (what.find("MPI_ERR_TRUNCATE") != std::string::npos)
      what += " -- a message arrived that is longer than the receive posted for it: sender and receiver "
              "disagree on a message's size, or on which segment a tag names (tags mixed up between "
              "pipelined segments?)";
    status::set_error(what);
    std::fprintf(stderr, "rank %d: error: %s\n", rank, what.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
}

std::string run_lab_code(const std::function<void()>& body, const std::string& learner) {
  std::string ni, library;
  guarded([&] {
    std::unique_ptr<LearnerCall> window;
    if (!learner.empty()) window = std::make_unique<LearnerCall>(learner);
    try {
      body();
    } catch (const NotImplemented& e) {
      ni = e.what();
    }
    if (window) library = window->close();
  });
  if (ni.empty()) ni = library;
  if (!agree_all(ni.empty())) return gather_text(ni);
  return "";
}

AllreduceFn watched(AllreduceFn fn, std::string what, std::string* found) {
  return [fn = std::move(fn), what = std::move(what), found](const void* s, void* r, std::size_t count, DataType t,
                                                             RedOp op, Communicator& c) {
    LearnerCall window(what);
    fn(s, r, count, t, op, c);
    std::string calls = window.close();
    if (found->empty()) *found = calls;
  };
}

VsLibrary time_vs_library(const AllreduceFn& lab, const HarnessOptions& options, Communicator& comm) {
  HarnessOptions o = options;
  o.in_place = false;
  Unrecorded harness;
  std::vector<Implementation> impls = {
      {"lab",
       [&lab](const void* s, void* r, std::size_t count, DataType t, RedOp op, Communicator& c) {
         Recorded learner;
         lab(s, r, count, t, op, c);
       }},
      library_implementation(comm)};
  const std::vector<Result> res = run_allreduce_sweep(comm, impls, o, nullptr);
  if (res.size() != 2) COMM_THROW("time_vs_library: options.min_bytes and max_bytes must name one size");
  return {res[0].out_of_place, res[1].out_of_place};
}

void record(const std::string& key, const std::string& value) { ::testing::Test::RecordProperty(key, value); }

namespace {

// WB_FAKE_<name>=<integer>, or -1 when unset or not an integer.
int fake(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n >= 0 && n < 1000000 ? static_cast<int>(n) : -1;
}

int visible_gpus() {
#ifdef COMM_WITH_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

// The CUDA MPS control daemon listens on <pipe directory>/control (CUDA_MPS_PIPE_DIRECTORY,
// default /tmp/nvidia-mps); a process that can reach it runs its contexts through MPS.
bool mps_reachable() {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string control = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp/nvidia-mps") + "/control";
  struct stat st {};
  return ::stat(control.c_str(), &st) == 0;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return 1;
}

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

}  // namespace

GpuSharing gpu_sharing(Communicator&) {
  GpuSharing s;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &s.ranks_on_node);
  MPI_Comm_free(&node);
  const int fake_gpus = fake("WB_FAKE_GPUS"), fake_mps = fake("WB_FAKE_MPS");
  s.gpus = fake_gpus >= 0 ? fake_gpus : visible_gpus();
  s.mps = fake_mps >= 0 ? fake_mps != 0 : s.gpus > 0 && mps_reachable();
  s.cores = usable_cores();
  // Every rank decides alike: the most crowded node's facts.
  int local[4] = {s.ranks_on_node, -s.gpus, s.mps ? 0 : 1, -s.cores}, worst[4];
  MPI_Allreduce(local, worst, 4, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return GpuSharing{worst[0], -worst[1], worst[2] == 0, -worst[3]};
}

std::string shared_gpu_reason(const GpuSharing& s, MemorySpace space) {
  if (space != MemorySpace::device || s.mps || s.gpus <= 0 || s.ranks_on_node <= s.gpus) return "";
  return plural(s.ranks_on_node, "rank", "ranks") + " would share " + plural(s.gpus, "GPU", "GPUs") +
         " (device buffers, no CUDA MPS server): the GPU switches between the ranks' contexts, time-slicing "
         "them, so the timing would measure that switching, not the collective. Run this check on a machine "
         "with a GPU per rank, or start the MPS server first (nvidia-cuda-mps-control -d) so that the ranks "
         "share the GPU side by side.";
}

std::string observed_slowness_cause(const GpuSharing& s, MemorySpace space) {
  if (std::string gpu = shared_gpu_reason(s, space); !gpu.empty()) return "the cause: " + gpu;
  int running = 0, total = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    double a = 0, b = 0, c = 0;
    if (std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) running = 0;
    std::fclose(f);
  }
  if (running > s.cores) {
    return "the cause: the CPU was oversubscribed (" + std::to_string(running) + " runnable threads on " +
           plural(s.cores, "core", "cores") + " just after the timing, /proc/loadavg): each message waited for "
           "the scheduler. Run this check again with nothing else busy on the machine.";
  }
  return "neither a shared GPU nor a busy CPU explains it (" + std::to_string(running) + " runnable threads on " +
         plural(s.cores, "core", "cores") + " just after the timing, " +
         (space == MemorySpace::device ? plural(s.gpus, "GPU", "GPUs") + " for " : std::string("host buffers, ")) +
         plural(s.ranks_on_node, "rank", "ranks") + " on this node): MPI's own transport is slow here (TCP, or a "
         "virtual machine's network). Run this check again, and compare with `./workbook bench collectives`.";
}

std::string sweep_allreduce(const std::function<AllreduceFn(std::size_t, DataType)>& make, DataType type, RedOp op,
                            std::size_t* cases, const std::string& name) {
  *cases = 0;
  for (std::size_t count : sweep_counts(world().size(), type)) {
    for (bool in_place : {false, true}) {
      std::string failure =
          check_allreduce(make(count, type), count, type, op, in_place, DataMode::verifiable, 7, name);
      if (!failure.empty()) return failure;
      ++*cases;
    }
  }
  return "";
}

std::vector<std::size_t> sweep_counts(int n, DataType type) {
  std::vector<std::size_t> c = {0, 1, 7, static_cast<std::size_t>(n - 1), static_cast<std::size_t>(n + 1),
                                (std::size_t(1) << 20) / size_of(type) + 3};
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

Range reference_chunk(std::size_t count, int n, int c) {
  const std::size_t q = count / static_cast<std::size_t>(n), rem = count % static_cast<std::size_t>(n);
  const std::size_t uc = static_cast<std::size_t>(c);
  return {uc * q + std::min(uc, rem), q + (uc < rem ? 1 : 0)};
}

std::string diagnose_allreduce(const AllreduceFn& fn, std::size_t count, DataType type) {
  return dispatch(type, [&](auto zero) { return diagnose_typed<decltype(zero)>(fn, count); });
}

std::string check_allreduce(const AllreduceFn& fn, std::size_t count, DataType type, RedOp op, bool in_place,
                            DataMode mode, std::uint64_t seed, const std::string& name) {
  Communicator& w = world();
  const int n = w.size();
  const std::size_t bytes = count * size_of(type);
  std::vector<char> input(bytes), got(bytes), after(bytes), expect(bytes);
  std::vector<double> tol;
  fill_input(input.data(), count, type, mode, op, n, w.rank(), seed);
  Buffer send = w.allocate(bytes), recv = w.allocate(bytes);
  copy(send.data(), send.space(), input.data(), MemorySpace::host, bytes);
  if (in_place)
    copy(recv.data(), recv.space(), input.data(), MemorySpace::host, bytes);
  else
    fill_bytes(recv.data(), recv.space(), 0xff, bytes);
  std::string not_implemented;
  guarded([&] {
    LearnerCall window(describe(type, op, count, in_place, n) + ": " + name);
    try {
      fn(in_place ? recv.data() : send.data(), recv.data(), count, type, op, w);
    } catch (const NotImplemented& e) {
      not_implemented = e.what();
    }
    const std::string library = window.close();
    if (not_implemented.empty()) not_implemented = library;
  });
  if (!agree_all(not_implemented.empty())) return gather_text(not_implemented);
  copy(got.data(), MemorySpace::host, recv.data(), recv.space(), bytes);
  copy(after.data(), MemorySpace::host, send.data(), send.space(), bytes);
  if (mode == DataMode::verifiable && count >= (std::size_t(1) << 20) && n > 1) {
    // Large buffers: each rank computes one chunk of the reference and the chunks are
    // gathered (with the library's all-gather), which divides the work by n.
    const Range mine = reference_chunk(count, n, w.rank());
    std::vector<char> part(mine.count * size_of(type));
    expected_allreduce(part.data(), nullptr, mine.count, type, mode, op, n, seed, mine.offset);
    std::vector<int> counts(n), displs(n);
    for (int c = 0; c < n; ++c) {
      Range rc = reference_chunk(count, n, c);
      counts[c] = static_cast<int>(rc.count * size_of(type));
      displs[c] = static_cast<int>(rc.offset * size_of(type));
    }
    MPI_Request request;
    PMPI_Iallgatherv(part.data(), counts[w.rank()], MPI_BYTE, expect.data(), counts.data(), displs.data(), MPI_BYTE,
                     MPI_COMM_WORLD, &request);
    wait_sleeping(&request);
  } else {
    expected_allreduce(expect.data(), &tol, count, type, mode, op, n, seed);
  }

  std::ostringstream local;
  Mismatch m;
  std::size_t wrong = count_wrong(got.data(), expect.data(), &tol, count, type, &m);
  if (wrong > 0) {
    local << describe(type, op, count, in_place, n) << ": " << wrong << " of " << count
          << " elements wrong; first at index " << m.index << " (chunk " << chunk_containing(count, n, m.index)
          << " of " << n << "): expected " << m.expected << ", got " << m.got;
    if (m.tolerance > 0) local << " (tolerance " << m.tolerance << ")";
    local << ".";
  } else if (!in_place && std::memcmp(input.data(), after.data(), bytes) != 0) {
    std::size_t i = 0;
    while (input[i] == after[i]) ++i;
    local << describe(type, op, count, in_place, n) << ": the send buffer was modified (byte " << i
          << "); an out-of-place all-reduce must leave its input untouched: work in recvbuf or scratch memory.";
  }
  if (agree_all(local.str().empty())) return "";
  std::string diag, library;
  guarded([&] { diag = diagnose_allreduce(watched(fn, name, &library), count, type); });
  if (!library.empty()) diag = library + (diag.empty() ? "" : "\n    " + diag);
  std::string text = local.str();
  if (!diag.empty()) text += (text.empty() ? "" : "\n    diagnosis: ") + diag;
  return gather_text(text);
}

namespace {

// "json:FILE" -> "json:FILE.rank<R>"; a directory ("json:DIR/") or a bare format ("json")
// is left as it is (GoogleTest would name the file after the program on every rank, so
// run_all_tests turns that file off on ranks R > 0).
std::string per_rank_output(const std::string& value, int rank) {
  if (value.empty() || value.back() == '/' || value.back() == ':' || value.find(':') == std::string::npos)
    return value;
  return value + ".rank" + std::to_string(rank);
}

// Gives rank R > 0 its own --gtest_output file. GoogleTest opens the output file named by
// the flag inside InitGoogleTest, so the name must change before that call: changing the
// flag afterwards leaves every rank writing the same file at the same time, and rank 0's
// report can then be truncated or interleaved with another rank's.
void rename_rank_output(int* argc, char** argv, int rank) {
  static std::vector<std::string> storage;  // argv entries must outlive InitGoogleTest's parse
  static const std::string flag = "--gtest_output=";
  bool found = false;
  storage.reserve(static_cast<std::size_t>(*argc));
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp(argv[i], flag.c_str(), flag.size()) != 0) continue;
    storage.push_back(flag + per_rank_output(argv[i] + flag.size(), rank));
    argv[i] = storage.back().data();
    found = true;
  }
  const char* env = std::getenv("GTEST_OUTPUT");
  if (!found && env) setenv("GTEST_OUTPUT", per_rank_output(env, rank).c_str(), 1);
}

}  // namespace

int run_all_tests(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  const int rank = session.world_rank();
  if (rank != 0) rename_rank_output(&argc, argv, rank);
  ::testing::InitGoogleTest(&argc, argv);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    const std::string suffix = ".rank" + std::to_string(rank);
    const std::string out = ::testing::GTEST_FLAG(output);
    if (out.size() < suffix.size() || out.compare(out.size() - suffix.size(), suffix.size(), suffix) != 0)
      delete listeners.Release(listeners.default_xml_generator());  // no file of its own: write none
  }
  listeners.Append(new StatusListener(rank));
  int rc = 1;
  guarded([&] {
    const char* backend = std::getenv("WB_COMM_BACKEND");
    if (backend && std::string(backend) == "nccl") {
#ifdef COMM_WITH_NCCL
      g_world = make_nccl_communicator(MPI_COMM_WORLD);
#else
      COMM_THROW("WB_COMM_BACKEND=nccl, but this build has no NCCL (configure the cuda backend with NCCL installed)");
#endif
    } else {
      g_world = make_mpi_communicator(MPI_COMM_WORLD, default_memory_space());
    }
    // Started: from here on the launcher's time limits are the checks' (checker/mpi_launch.py
    // does not count MPI_Init, the GPU's context or the communicator's creation against them).
    status::set_ready();
    rc = RUN_ALL_TESTS();
  });
  int worst = rc;
  PMPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  g_world.reset();
  status::set_done();
  return worst;
}

}  // namespace comm::check
