// All-reduce benchmark: ring (lab 10 solution), double binary tree (lab 11 solution),
// naive reduce+broadcast (lab 09 solution) and the library (MPI_Allreduce), interleaved, in
// the format of nccl-tests, plus the alpha-beta model fitted from ping-pong.
//
//   bench_collectives [--ranks 2,4] [nccl-tests flags: -b -e -f -n -w -c -d -o]
//
// Without an MPI launcher around it, it runs itself under mpirun once per rank count
// (more ranks than cores are allowed). Under mpirun it measures:
// 1. ping-pong one-way times from 8 B to 4 MiB and the least-squares alpha and beta;
// 2. the all-reduce sweep table (default 8 B to 64 MiB, factor 8);
// 3. an 8-byte latency run with many iterations (tree vs library);
// 4. summary lines "case=NAME ranks=N bytes=B ratio_busbw_vs_mpi=R", the naive all-reduce's
//    predicted vs measured time, and the predicted vs measured ring/tree crossover.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "comm/error.h"
#include "comm/harness.h"
#include "comm/mpi_communicator.h"
#include "mpi_self_launch.h"
#include "point_to_point.h"
#include "ring_allreduce.h"
#include "tree_allreduce.h"

namespace {

lab09::AlphaBeta fit_pingpong(comm::Communicator& c, std::FILE* out) {
  std::vector<lab09::Sample> samples;
  comm::Buffer buf = c.allocate(4 << 20);
  comm::fill_bytes(buf.data(), buf.space(), 1, 4 << 20);
  if (out) std::fprintf(out, "# ping-pong between ranks 0 and 1 (one-way time, median)\n#%11s %12s %10s\n", "bytes",
                        "time (us)", "GB/s");
  for (std::size_t b = 8; b <= (std::size_t(4) << 20); b *= 8) {
    lab09::pingpong(c, buf.data(), b, 5);
    double t = lab09::pingpong(c, buf.data(), b, b > (1 << 20) ? 20 : 100);
    c.library_allreduce(&t, &t, 1, comm::DataType::f64, comm::RedOp::max);  // rank 0's value everywhere
    samples.push_back({static_cast<double>(b), t});
    if (out) std::fprintf(out, " %11zu %12.2f %10.3f\n", b, t * 1e6, b / t / 1e9);
  }
  lab09::AlphaBeta m = lab09::fit_alpha_beta(samples);
  if (out)
    std::fprintf(out, "# alpha-beta fit: alpha = %.2f us, beta = %.4f ns/B (%.2f GB/s)\n#\n", m.alpha * 1e6,
                 m.beta * 1e9, 1 / m.beta / 1e9);
  return m;
}

const comm::Result* find(const std::vector<comm::Result>& rs, const std::string& impl, std::size_t bytes) {
  for (const auto& r : rs)
    if (r.impl == impl && r.bytes == bytes) return &r;
  return nullptr;
}

int worker(int argc, char** argv) {
  comm::MpiSession session(&argc, &argv);
  auto c = comm::make_mpi_communicator();
  const int n = c->size();
  std::FILE* out = c->rank() == 0 ? stdout : nullptr;
  std::vector<std::string> rest;
  comm::HarnessOptions defaults;
  defaults.min_bytes = 8;
  defaults.max_bytes = 64 << 20;
  defaults.step_factor = 8;
  defaults.iters = 10;
  defaults.warmup = 3;
  const comm::HarnessOptions o = comm::parse_harness_options(argc, argv, &rest, defaults);
  if (!rest.empty()) throw comm::Error(__FILE__, __LINE__, "unknown option '" + rest[0] + "'");

  lab09::AlphaBeta m09{};
  if (n >= 2) m09 = fit_pingpong(*c, out);

  std::vector<comm::Implementation> impls = {
      {"ring", [](const void* s, void* r, std::size_t k, comm::DataType t, comm::RedOp op, comm::Communicator& w) {
         lab10::ring_allreduce_pipelined(s, r, k, t, op, w, lab10::default_segment_bytes);
       }},
      {"tree", [](const void* s, void* r, std::size_t k, comm::DataType t, comm::RedOp op, comm::Communicator& w) {
         lab11::double_tree_allreduce(s, r, k, t, op, w, lab11::default_segment_bytes);
       }},
      {"naive", [](const void* s, void* r, std::size_t k, comm::DataType t, comm::RedOp op, comm::Communicator& w) {
         lab09::naive_allreduce(s, r, k, t, op, w);
       }},
      comm::library_implementation(*c)};
  const std::string lib = impls.back().name;
  auto results = comm::run_allreduce_sweep(*c, impls, o, out);

  // Latency: 8 bytes, many iterations.
  comm::HarnessOptions lat = o;
  lat.min_bytes = lat.max_bytes = 8;
  lat.iters = 500;
  lat.warmup = 50;
  lat.in_place = false;
  if (out) std::fprintf(out, "#\n# 8-byte latency, %d iterations\n", lat.iters);
  auto latency = comm::run_allreduce_sweep(*c, {impls[1], impls[3], impls[0]}, lat, out);

  if (out) {
    std::fprintf(out, "#\n# summary (out of place; ratio = busbw / %s busbw, time ratio = time / %s time)\n",
                 lib.c_str(), lib.c_str());
    for (const auto& r : results) {
      if (r.impl == lib) continue;
      const comm::Result* base = find(results, lib, r.bytes);
      if (!base || base->out_of_place.busbw <= 0) continue;
      std::fprintf(out, "case=%s ranks=%d bytes=%zu ratio_busbw_vs_%s=%.3f\n", r.impl.c_str(), n, r.bytes,
                   lib.c_str(), r.out_of_place.busbw / base->out_of_place.busbw);
    }
    const comm::Result* lt = find(latency, "tree", 8);
    const comm::Result* lm = find(latency, lib, 8);
    if (lt && lm && lm->out_of_place.time_us > 0)
      std::fprintf(out, "case=tree_latency ranks=%d bytes=8 ratio_busbw_vs_%s=%.3f ratio_time_vs_%s=%.3f\n", n,
                   lib.c_str(), lm->out_of_place.time_us / lt->out_of_place.time_us, lib.c_str(),
                   lt->out_of_place.time_us / lm->out_of_place.time_us);
    if (n >= 2) {
      std::fprintf(out, "#\n# naive all-reduce: predicted 2(n-1)(alpha + bytes beta) vs measured\n");
      for (const auto& r : results)
        if (r.impl == "naive")
          std::fprintf(out, "naive bytes=%zu predicted_us=%.2f measured_us=%.2f\n", r.bytes,
                       lab09::predicted_naive_allreduce_time(m09, n, r.bytes) * 1e6, r.out_of_place.time_us);
      lab11::AlphaBeta m11{m09.alpha, m09.beta};
      // Measured crossover: the smallest size from which the ring stays faster than the tree.
      std::size_t measured = 0;
      bool found = false;
      for (auto it = results.rbegin(); it != results.rend(); ++it) {
        if (it->impl != "ring") continue;
        const comm::Result* t = find(results, "tree", it->bytes);
        if (t && it->out_of_place.time_us < t->out_of_place.time_us) {
          measured = it->bytes;
          found = true;
        } else {
          break;
        }
      }
      std::fprintf(out, "crossover ranks=%d predicted_bytes=%.0f measured_bytes=%s\n", n,
                   lab11::predicted_crossover_bytes(m11, n),
                   found ? std::to_string(measured).c_str() : "none (the tree was faster at the largest size)");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (bench::under_mpi()) return worker(argc, argv);
    std::vector<int> ranks = {2, 4};
    std::vector<char*> pass = {argv[0]};
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--ranks" && i + 1 < argc) {
        ranks = bench::parse_ranks(argv[++i]);
      } else {
        pass.push_back(argv[i]);
      }
    }
    int rc = 0;
    for (int n : ranks) {
      std::printf("\n### all-reduce with %d ranks\n", n);
      rc |= bench::launch(n, pass.data(), static_cast<int>(pass.size()));
    }
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_collectives: %s\n", e.what());
    return 1;
  }
}
