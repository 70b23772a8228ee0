// Collective benchmark of the reference solutions of labs 09-11 beside the library (MPI or
// NCCL), interleaved, in the format of nccl-tests, plus the alpha-beta model fitted from
// ping-pong. All eight of NCCL's collectives: all-reduce (ring, double binary tree, naive),
// broadcast and reduce (linear, binomial tree, pipelined chain), gather and scatter (linear,
// binomial tree), all-gather and reduce-scatter (ring), all-to-all (pairwise, Bruck).
//
//   bench_collectives [--ranks 2,4] [--collectives allreduce,broadcast,...] [--csv FILE]
//                     [nccl-tests flags: -b -e -f -n -w -c -d -o -r]
//
// --csv FILE appends one line per measurement (collective, impl, ranks, bytes, in_place,
// time_us, algbw, busbw, wrong) for plotting (bench/collectives/plot.py).
//
// Without an MPI launcher around it, it runs itself under mpirun once per rank count
// (more ranks than cores are allowed). Under mpirun it measures:
// 1. ping-pong one-way times from 8 B to 4 MiB and the least-squares alpha and beta;
// 2. the all-reduce sweep table (default 8 B to 64 MiB, factor 8);
// 3. an 8-byte latency run with many iterations (tree vs library);
// 4. summary lines "case=NAME ranks=N bytes=B ratio_busbw_vs_mpi=R", the naive all-reduce's
//    predicted vs measured time, and the predicted vs measured ring/tree crossover;
// 5. one table per other collective (default 1 KiB to 16 MiB, factor 16).

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "comm/error.h"
#include "comm/harness.h"
#include "comm/types.h"
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

using comm::Collective;
using comm::CollectiveImplementation;

// The reference algorithms of each collective (lab 09: linear; lab 10: ring, all-to-all; lab
// 11: trees and chain).
std::vector<CollectiveImplementation> algorithms(Collective kind) {
  using comm::DataType;
  using comm::RedOp;
  using W = comm::Communicator;
  switch (kind) {
    case Collective::broadcast:
      return {{"linear", [](const void* s, void* r, std::size_t c, DataType t, RedOp, int root, W& w) {
                 lab09::linear_broadcast(s, r, c, t, root, w);
               }},
              {"binomial", [](const void* s, void* r, std::size_t c, DataType t, RedOp, int root, W& w) {
                 lab11::binomial_broadcast(s, r, c, t, root, w);
               }},
              {"chain", [](const void* s, void* r, std::size_t c, DataType t, RedOp, int root, W& w) {
                 lab11::chain_broadcast(s, r, c, t, root, w, lab11::default_chain_segment_bytes);
               }}};
    case Collective::reduce:
      return {{"linear", [](const void* s, void* r, std::size_t c, DataType t, RedOp op, int root, W& w) {
                 lab09::linear_reduce(s, r, c, t, op, root, w);
               }},
              {"binomial", [](const void* s, void* r, std::size_t c, DataType t, RedOp op, int root, W& w) {
                 lab11::binomial_reduce(s, r, c, t, op, root, w);
               }},
              {"chain", [](const void* s, void* r, std::size_t c, DataType t, RedOp op, int root, W& w) {
                 lab11::chain_reduce(s, r, c, t, op, root, w, lab11::default_chain_segment_bytes);
               }}};
    case Collective::gather:
      return {{"linear", [](const void* s, void* r, std::size_t c, DataType t, RedOp, int root, W& w) {
                 lab09::linear_gather(s, r, c, t, root, w);
               }},
              {"binomial", [](const void* s, void* r, std::size_t c, DataType t, RedOp, int root, W& w) {
                 lab11::binomial_gather(s, r, c, t, root, w);
               }}};
    case Collective::scatter:
      return {{"linear", [](const void* s, void* r, std::size_t c, DataType t, RedOp, int root, W& w) {
                 lab09::linear_scatter(s, r, c, t, root, w);
               }},
              {"binomial", [](const void* s, void* r, std::size_t c, DataType t, RedOp, int root, W& w) {
                 lab11::binomial_scatter(s, r, c, t, root, w);
               }}};
    case Collective::allgather:
      // Lab 10's in-place ring all-gather: with count elements per rank, chunk q is block q.
      return {{"ring", [](const void* s, void* r, std::size_t c, DataType t, RedOp, int, W& w) {
                 const std::size_t block = c * comm::size_of(t);
                 char* own = static_cast<char*>(r) + static_cast<std::size_t>(w.rank()) * block;
                 if (s != own) w.copy(own, s, block);
                 lab10::ring_allgather(r, c * static_cast<std::size_t>(w.size()), t, w);
               }}};
    case Collective::reduce_scatter:
      // Lab 10's ring reduce-scatter works in place on the whole buffer: on a copy, so that an
      // out-of-place send buffer stays as it was (the copy is part of the measured time).
      return {{"ring", [](const void* s, void* r, std::size_t c, DataType t, RedOp op, int, W& w) {
                 const std::size_t block = c * comm::size_of(t), n = static_cast<std::size_t>(w.size());
                 void* work = w.scratch(block * n, 3);
                 w.copy(work, s, block * n);
                 lab10::ring_reduce_scatter(work, c * n, t, op, w);
                 w.copy(r, static_cast<char*>(work) + static_cast<std::size_t>(w.rank()) * block, block);
               }}};
    case Collective::alltoall:
      return {{"pairwise", [](const void* s, void* r, std::size_t c, DataType t, RedOp, int, W& w) {
                 lab10::alltoall_pairwise(s, r, c, t, w);
               }},
              {"bruck", [](const void* s, void* r, std::size_t c, DataType t, RedOp, int, W& w) {
                 lab10::alltoall_bruck(s, r, c, t, w);
               }}};
    case Collective::allreduce: break;
  }
  return {};
}

Collective parse_collective(const std::string& name) {
  for (int k = 0; k < 8; ++k)
    if (name == comm::name_of(static_cast<Collective>(k))) return static_cast<Collective>(k);
  throw comm::Error(__FILE__, __LINE__,
                    "--collectives: unknown collective '" + name +
                        "' (allreduce, broadcast, reduce, allgather, reduce_scatter, gather, scatter, alltoall)");
}

void write_csv(const std::string& path, Collective kind, int n, const std::vector<comm::Result>& rs) {
  if (path.empty()) return;
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) throw comm::Error(__FILE__, __LINE__, "--csv: cannot open " + path + ": " + std::strerror(errno));
  for (const auto& r : rs)
    for (int ip = 0; ip < 2; ++ip) {
      const comm::Timing& t = ip ? r.in_place : r.out_of_place;
      if (t.time_us <= 0) continue;
      std::fprintf(f, "%s,%s,%d,%zu,%d,%.3f,%.4f,%.4f,%zu\n", comm::name_of(kind), r.impl.c_str(), n, r.bytes, ip,
                   t.time_us, t.algbw, t.busbw, t.wrong);
    }
  std::fclose(f);
}

const comm::Result* find(const std::vector<comm::Result>& rs, const std::string& impl, std::size_t bytes) {
  for (const auto& r : rs)
    if (r.impl == impl && r.bytes == bytes) return &r;
  return nullptr;
}

void report_allreduce(comm::Communicator& c, const comm::HarnessOptions& o, const lab09::AlphaBeta& m09,
                      const std::string& csv, std::FILE* out);

// True when the command line sets the sweep's sizes (then every collective uses them).
bool explicit_sizes(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-b" || a == "-e" || a == "-f" || a == "-i" || a == "--minbytes" || a == "--maxbytes") return true;
  }
  return false;
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
  std::string csv;
  std::vector<Collective> kinds;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "--csv" && i + 1 < rest.size()) {
      csv = rest[++i];
    } else if (rest[i] == "--collectives" && i + 1 < rest.size()) {
      const std::string list = rest[++i];
      for (std::size_t p = 0; p <= list.size();) {
        const std::size_t q = std::min(list.find(',', p), list.size());
        if (q > p) kinds.push_back(parse_collective(list.substr(p, q - p)));
        p = q + 1;
      }
    } else {
      throw comm::Error(__FILE__, __LINE__, "unknown option '" + rest[i] + "'");
    }
  }
  if (kinds.empty())
    for (int k = 0; k < 8; ++k) kinds.push_back(static_cast<Collective>(k));
  const bool allreduce = std::find(kinds.begin(), kinds.end(), Collective::allreduce) != kinds.end();
  if (c->rank() != 0) csv.clear();

  lab09::AlphaBeta m09{};
  if (n >= 2 && allreduce) m09 = fit_pingpong(*c, out);
  if (allreduce) report_allreduce(*c, o, m09, csv, out);
  // The other collectives: smaller sweeps by default (1 KiB to 16 MiB, factor 16).
  comm::HarnessOptions other = o;
  if (!explicit_sizes(argc, argv)) {
    other.min_bytes = 1024;
    other.max_bytes = 16 << 20;
    other.step_factor = 16;
  }
  for (Collective kind : kinds) {
    if (kind == Collective::allreduce) continue;
    if (out) std::fprintf(out, "#\n");
    auto impls = algorithms(kind);
    impls.push_back(comm::library_implementation(*c, kind));
    const std::string lib = impls.back().name;
    auto rs = comm::run_collective_sweep(*c, kind, impls, other, out);
    write_csv(csv, kind, n, rs);
    if (out)
      for (const auto& r : rs) {
        const comm::Result* base = find(rs, lib, r.bytes);
        if (r.impl == lib || !base || base->out_of_place.busbw <= 0) continue;
        std::fprintf(out, "case=%s_%s ranks=%d bytes=%zu ratio_busbw_vs_%s=%.3f\n", comm::name_of(kind),
                     r.impl.c_str(), n, r.bytes, lib.c_str(), r.out_of_place.busbw / base->out_of_place.busbw);
      }
  }
  return 0;
}

// The all-reduce report: sweep table, 8-byte latency, summary, naive prediction, crossover.
void report_allreduce(comm::Communicator& c, const comm::HarnessOptions& o, const lab09::AlphaBeta& m09,
                      const std::string& csv, std::FILE* out) {
  const int n = c.size();

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
      comm::library_implementation(c)};
  const std::string lib = impls.back().name;
  auto results = comm::run_allreduce_sweep(c, impls, o, out);
  write_csv(csv, Collective::allreduce, n, results);

  // Latency: 8 bytes, many iterations.
  comm::HarnessOptions lat = o;
  lat.min_bytes = lat.max_bytes = 8;
  lat.iters = 500;
  lat.warmup = 50;
  lat.in_place = false;
  if (out) std::fprintf(out, "#\n# 8-byte latency, %d iterations\n", lat.iters);
  auto latency = comm::run_allreduce_sweep(c, {impls[1], impls[3], impls[0]}, lat, out);

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
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (bench::under_mpi()) return worker(argc, argv);
    std::vector<int> ranks = {2, 4};
    std::vector<char*> pass = {argv[0]};
    // --csv FILE, or WB_BENCH_CSV from `./workbook bench`: started afresh with a header here,
    // appended to by rank 0 of each job.
    std::string csv = std::getenv("WB_BENCH_CSV") ? std::getenv("WB_BENCH_CSV") : "";
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--ranks" && i + 1 < argc) {
        ranks = bench::parse_ranks(argv[++i]);
      } else if (std::string(argv[i]) == "--csv" && i + 1 < argc) {
        csv = argv[++i];
      } else {
        pass.push_back(argv[i]);
      }
    }
    std::string csv_flag = "--csv";
    if (!csv.empty()) {
      std::FILE* f = std::fopen(csv.c_str(), "w");
      if (!f) throw comm::Error(__FILE__, __LINE__, "cannot write " + csv + ": " + std::strerror(errno));
      std::fprintf(f, "collective,impl,ranks,bytes,in_place,time_us,algbw_gbs,busbw_gbs,wrong\n");
      std::fclose(f);
      pass.push_back(csv_flag.data());
      pass.push_back(csv.data());
    }
    int rc = 0;
    for (int n : ranks) {
      std::printf("\n### collectives with %d ranks\n", n);
      rc |= bench::launch(n, pass.data(), static_cast<int>(pass.size()));
    }
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_collectives: %s\n", e.what());
    return 1;
  }
}
