// A collective benchmark harness in the format of nccl-tests (all-reduce, and the other seven
// collectives through run_collective_sweep).
//
// Each implementation plugs in as a name and a function with the signature of ncclAllReduce
// (sendbuf, recvbuf, count, type, op, communicator); in place when sendbuf == recvbuf.
// For every size the harness times all implementations interleaved (the order rotates each
// iteration, so drift of the machine is shared), out of place then in place:
// - a barrier precedes each timed call; a call's time is the maximum over ranks,
// - the reported time is the median over iterations after warm-up,
// - algbw = bytes / time, busbw = algbw * 2(n-1)/n (nccl-tests' all-reduce bus factor),
// - #wrong counts wrong elements over all ranks in a separate validation run on
//   verifiable (or random, with an error bound) inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/verify.h"

namespace comm {

using AllreduceFn = std::function<void(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                                       RedOp op, Communicator& comm)>;

struct Implementation {
  std::string name;
  AllreduceFn run;
};

/// The library's all-reduce ("mpi" or "nccl", after the communicator's backend).
Implementation library_implementation(const Communicator& comm);

struct HarnessOptions {
  std::size_t min_bytes = 32 * 1024 * 1024;  ///< -b
  std::size_t max_bytes = 32 * 1024 * 1024;  ///< -e
  double step_factor = 2;                    ///< -f  (multiplicative step)
  std::size_t step_bytes = 0;                ///< -i  (additive step; used when > 0)
  int iters = 20;                            ///< -n
  int warmup = 5;                            ///< -w
  bool check = true;                         ///< -c 0|1
  DataType type = DataType::f32;             ///< -d float|double|int32
  RedOp op = RedOp::sum;                     ///< -o sum|prod|min|max
  DataMode data = DataMode::verifiable;      ///< --data verifiable|random
  bool in_place = true;                      ///< --no-in-place turns the in-place half off
  std::uint64_t seed = 1;                    ///< --seed
  int root = 0;                              ///< -r  (broadcast, reduce, gather, scatter)
};

/// Parses nccl-tests' flags -b -e -f -i -n -w -c -d -o -r (sizes accept K, M, G suffixes) and
/// --data, --seed, --no-in-place. Arguments it does not know are returned in `rest`.
/// Throws comm::Error on a malformed value. Flags not given keep their value in `defaults`.
HarnessOptions parse_harness_options(int argc, char** argv, std::vector<std::string>* rest,
                                     const HarnessOptions& defaults = HarnessOptions());

/// "64M" -> 67108864; throws comm::Error on a malformed size.
std::size_t parse_size(const std::string& text);

/// The sizes of a sweep, in bytes, rounded down to whole elements of `type`.
std::vector<std::size_t> sweep_sizes(const HarnessOptions& o);

double allreduce_bus_factor(int nranks);

struct Timing {
  double time_us = 0, algbw = 0, busbw = 0;  ///< GB/s = 1e9 bytes/s, as nccl-tests
  std::size_t wrong = 0;                     ///< summed over ranks; 0 when validation is off
};

struct Result {
  std::string impl;
  std::size_t bytes = 0, count = 0;
  Timing out_of_place, in_place;
};

/// Runs the sweep and, on rank 0, prints the table to `out` (nullptr: print nothing).
/// Every rank returns the same results.
std::vector<Result> run_allreduce_sweep(Communicator& comm, const std::vector<Implementation>& impls,
                                        const HarnessOptions& options, std::FILE* out);

// ---- the other seven collectives ------------------------------------------------------------

/// An implementation of one collective in NCCL's form (comm::LibraryCall: count per rank for
/// all-gather, reduce-scatter, gather, scatter and all-to-all; arguments the collective does
/// not take are ignored).
using CollectiveRun = std::function<void(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                                         RedOp op, int root, Communicator& comm)>;
struct CollectiveImplementation {
  std::string name;
  CollectiveRun run;
};

/// The library's `kind` ("mpi" or "nccl").
CollectiveImplementation library_implementation(const Communicator& comm, Collective kind);

/// nccl-tests' bus-bandwidth factor: all-reduce 2(n-1)/n; broadcast and reduce 1;
/// all-gather, reduce-scatter, gather, scatter and all-to-all (n-1)/n.
double bus_factor(Collective kind, int nranks);

/// The size column of nccl-tests: the bytes of the larger buffer (n * count elements for
/// the per-rank collectives), for `count` elements per rank or buffer.
std::size_t collective_bytes(Collective kind, std::size_t count, DataType type, int nranks);

/// run_allreduce_sweep for any collective (`options.root` for the rooted ones): sizes are
/// nccl-tests' (the larger buffer, rounded down to whole elements per rank), busbw uses
/// bus_factor, and \#wrong counts elements that differ bit for bit from the library's result
/// on the same (verifiable) inputs, summed over the ranks that hold a result.
std::vector<Result> run_collective_sweep(Communicator& comm, Collective kind,
                                         const std::vector<CollectiveImplementation>& impls,
                                         const HarnessOptions& options, std::FILE* out);

}  // namespace comm
