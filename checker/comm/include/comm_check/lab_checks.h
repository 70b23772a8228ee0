// What the checks of labs 09-11 (checker/labs/09-point-to-point, 10-ring-allreduce and
// 11-tree-allreduce) share on top of comm/check.h: sweeps recorded and failed alike, a call of the
// lab's code whose messages are counted, and a lab function judged on inputs the check builds.
// Header only. The expect_* helpers fail the running GoogleTest check as its body would: a check
// calls one as its last statement.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "comm/check.h"

namespace comm::check {

/// ceil(log2 n) for n >= 1: the depth of a binomial tree, the rounds of Bruck's all-to-all.
inline int ceil_log2(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

/// Runs `sweeps` in order (each returns "" or a failure report and sets *passed to the cases it
/// passed) and records the MEASURED value: "k/k cases bit-exact", or at the first failure "k cases
/// passed before the failing one" (k counts every sweep's cases), and fails the check with the report.
inline void expect_sweeps(const std::vector<std::function<std::string(std::size_t* passed)>>& sweeps) {
  std::size_t cases = 0;
  for (const auto& sweep : sweeps) {
    std::size_t passed = 0;
    const std::string failure = sweep(&passed);
    cases += passed;
    if (!failure.empty()) {
      record("measured", std::to_string(cases) + " cases passed before the failing one");
      FAIL() << failure;
    }
  }
  record("measured", std::to_string(cases) + "/" + std::to_string(cases) + " cases bit-exact");
}

/// sweep_allreduce of the lab's all-reduce `name` (`make` builds it per count and type) for one type
/// and operator, recorded and failed as expect_sweeps does.
inline void expect_allreduce_sweep(const std::function<AllreduceFn(std::size_t count, DataType type)>& make,
                                   DataType type, RedOp op, const std::string& name) {
  expect_sweeps({[&](std::size_t* passed) { return sweep_allreduce(make, type, op, passed, name); }});
}
/// The same of one all-reduce `fn` for every count and type.
inline void expect_allreduce_sweep(const AllreduceFn& fn, DataType type, RedOp op, const std::string& name) {
  expect_allreduce_sweep([&](std::size_t, DataType) { return fn; }, type, op, name);
}

/// sweep_collective of the lab's collective `name` (`fn`, a `kind`) for each type and operator of
/// `cases` in turn, recorded and failed as expect_sweeps does.
inline void expect_collective_sweeps(const CollectiveFn& fn, Collective kind, const std::string& name,
                                     const std::vector<std::pair<DataType, RedOp>>& cases) {
  std::vector<std::function<std::string(std::size_t*)>> sweeps;
  for (const std::pair<DataType, RedOp>& c : cases) {
    sweeps.push_back(
        [&, c](std::size_t* passed) { return sweep_collective(fn, kind, c.first, c.second, passed, name); });
  }
  expect_sweeps(sweeps);
}

/// Runs `body`, a call of the lab's function `learner` (run_lab_code), with `comm`'s statistics reset
/// before it and, with `times`, its message times recorded during it: comm.stats() and
/// comm.message_times() then describe this call alone. Returns "" or the not-implemented text.
inline std::string run_counted(Communicator& comm, const std::function<void()>& body, const std::string& learner,
                               bool times = false) {
  comm.reset_stats();
  if (times) comm.record_message_times(true);
  std::string ni = run_lab_code(body, learner);
  if (times) comm.record_message_times(false);
  return ni;
}

/// run_counted of the lab's all-reduce `fn` (`learner`) on `count` floats, sum, out of place: the
/// call of a check that counts messages and bytes, not values (the inputs are zeros).
inline std::string run_allreduce_counted(Communicator& comm, const AllreduceFn& fn, std::size_t count,
                                         const std::string& learner) {
  Buffer send = comm.allocate(count * 4), recv = comm.allocate(count * 4);
  fill_bytes(send.data(), send.space(), 0, count * 4);
  return run_counted(comm, [&] { fn(send.data(), recv.data(), count, DataType::f32, RedOp::sum, comm); }, learner);
}

/// A lab function that sends nothing (a model, a layout, a fit) judged through run_lab_code:
/// `verdict` calls it on the check's inputs and returns "" or what is wrong. Fails the check with
/// the not-implemented text, else with the verdict.
inline void expect_lab_verdict(const std::function<std::string()>& verdict) {
  std::string failure;
  const std::string ni = run_lab_code([&] { failure = verdict(); });
  if (!ni.empty()) FAIL() << ni;
  if (!failure.empty()) ADD_FAILURE() << failure;
}

/// check_allreduce of 64 MiB per rank, float sum then int32 max (out of place, verifiable data,
/// seed 7), of each of `fns` (the lab's all-reduce and its name) in turn; the first failure fails
/// the check, else "64 MiB bit-exact with {n} ranks" is recorded.
inline void expect_allreduce_64mib(const std::vector<std::pair<AllreduceFn, std::string>>& fns) {
  for (auto [type, op] : {std::pair{DataType::f32, RedOp::sum}, std::pair{DataType::i32, RedOp::max}}) {
    const std::size_t count = (std::size_t(64) << 20) / size_of(type);
    for (const auto& [fn, name] : fns) {
      std::string failure = check_allreduce(fn, count, type, op, false, DataMode::verifiable, 7, name);
      ASSERT_TRUE(failure.empty()) << failure;
    }
  }
  record("measured", "64 MiB bit-exact with " + std::to_string(world().size()) + " ranks");
}

/// Why a Performance check, timed with 2 and 4 ranks, does not time this run (for GTEST_SKIP): another
/// rank count, or ranks that would time-slice one GPU and so time the GPU's context switches, not the
/// lab's algorithm (shared_gpu_reason). "" when it times; *sharing (when given) then holds
/// gpu_sharing(comm).
inline std::string not_timed_reason(Communicator& comm, GpuSharing* sharing = nullptr) {
  if (comm.size() != 2 && comm.size() != 4) {
    return "measured with 2 and 4 ranks only (this run has " + std::to_string(comm.size()) + ")";
  }
  const GpuSharing found = gpu_sharing(comm);
  if (sharing) *sharing = found;
  return shared_gpu_reason(found, comm.memory_space());
}

/// "<lab / library>x ({lab} vs {library} {unit})" with two decimals: a timed comparison as the
/// MEASURED column shows it.
inline std::string ratio_text(double lab, double library, const std::string& unit) {
  std::ostringstream m;
  m.precision(2);
  m << std::fixed << lab / library << "x (" << lab << " vs " << library << " " << unit << ")";
  return m.str();
}

}  // namespace comm::check
