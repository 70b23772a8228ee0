#include "comm/harness.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "comm/error.h"
#include "comm/verify.h"

namespace comm {

Implementation library_implementation(const Communicator& comm) {
  return {comm.backend_name(), [](const void* s, void* r, std::size_t count, DataType t, RedOp op,
                                  Communicator& c) { c.library_allreduce(s, r, count, t, op); }};
}

std::size_t parse_size(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v < 0) COMM_THROW("'" + text + "' is not a size (examples: 8, 4K, 64M, 1G)");
  std::string suffix(end);
  double mult = 1;
  if (suffix == "K" || suffix == "k") mult = 1024.0;
  else if (suffix == "M" || suffix == "m") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) COMM_THROW("'" + text + "' has an unknown size suffix (use K, M or G)");
  return static_cast<std::size_t>(v * mult);
}

HarnessOptions parse_harness_options(int argc, char** argv, std::vector<std::string>* rest,
                                     const HarnessOptions& defaults) {
  HarnessOptions o = defaults;
  auto value = [&](int& i) -> std::string {
    std::string a = argv[i];
    if (i + 1 >= argc) COMM_THROW("option " + a + " needs a value");
    return argv[++i];
  };
  auto to_int = [](const std::string& s, const char* what) {
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (*end || end == s.c_str() || v < 0) COMM_THROW(std::string(what) + ": '" + s + "' is not a count");
    return static_cast<int>(v);
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-b" || a == "--minbytes") o.min_bytes = parse_size(value(i));
    else if (a == "-e" || a == "--maxbytes") o.max_bytes = parse_size(value(i));
    else if (a == "-f" || a == "--stepfactor") {
      o.step_factor = std::atof(value(i).c_str());
      if (!(o.step_factor > 1)) COMM_THROW("-f: the step factor must be > 1");
    } else if (a == "-i" || a == "--stepbytes") o.step_bytes = parse_size(value(i));
    else if (a == "-n" || a == "--iters") o.iters = std::max(1, to_int(value(i), "-n"));
    else if (a == "-w" || a == "--warmup_iters") o.warmup = to_int(value(i), "-w");
    else if (a == "-c" || a == "--check") o.check = to_int(value(i), "-c") != 0;
    else if (a == "-d" || a == "--datatype") o.type = parse_data_type(value(i));
    else if (a == "-o" || a == "--op") o.op = parse_red_op(value(i));
    else if (a == "-r" || a == "--root") o.root = to_int(value(i), "-r");
    else if (a == "--data") o.data = parse_data_mode(value(i));
    else if (a == "--seed") o.seed = static_cast<std::uint64_t>(to_int(value(i), "--seed"));
    else if (a == "--no-in-place") o.in_place = false;
    else if (rest) rest->push_back(a);
    else COMM_THROW("unknown option '" + a + "'");
  }
  if (o.max_bytes < o.min_bytes) o.max_bytes = o.min_bytes;
  return o;
}

std::vector<std::size_t> sweep_sizes(const HarnessOptions& o) {
  const std::size_t elem = size_of(o.type);
  std::vector<std::size_t> sizes;
  std::size_t b = o.min_bytes;
  while (true) {
    sizes.push_back(b / elem * elem);
    if (b >= o.max_bytes) break;
    std::size_t next = o.step_bytes > 0 ? b + o.step_bytes
                                        : std::max(b + 1, static_cast<std::size_t>(std::llround(b * o.step_factor)));
    if (b == 0) next = o.step_bytes > 0 ? o.step_bytes : elem;
    b = std::min(next, o.max_bytes);
  }
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

double allreduce_bus_factor(int n) { return n > 0 ? 2.0 * (n - 1) / n : 0.0; }

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Runs run_once(k) for m implementations, warm-up then `iters` times interleaved (the order
// rotates every iteration, so drift of the machine is shared); returns per implementation the
// median over iterations of the maximum over ranks, in seconds.
std::vector<double> time_interleaved(Communicator& comm, std::size_t m, const HarnessOptions& o,
                                     const std::function<double(std::size_t)>& run_once) {
  for (int w = 0; w < o.warmup; ++w)
    for (std::size_t k = 0; k < m; ++k) run_once(k);
  std::vector<double> t(static_cast<std::size_t>(o.iters) * m, 0.0);
  for (int it = 0; it < o.iters; ++it)
    for (std::size_t j = 0; j < m; ++j) {
      std::size_t k = (j + static_cast<std::size_t>(it)) % m;
      t[static_cast<std::size_t>(it) * m + k] = run_once(k);
    }
  std::vector<double> tmax(t.size());
  comm.library_allreduce(t.data(), tmax.data(), t.size(), DataType::f64, RedOp::max);
  std::vector<double> med(m);
  for (std::size_t k = 0; k < m; ++k) {
    std::vector<double> col;
    for (int it = 0; it < o.iters; ++it) col.push_back(tmax[static_cast<std::size_t>(it) * m + k]);
    med[k] = median(col);
  }
  return med;
}

// One row of a sweep table (out of place, then in place when measured).
void print_row(std::FILE* out, const Result& r, DataType type, const char* redop, bool in_place) {
  std::fprintf(out, " %11zu %13zu %8s %6s %10s %10.2f %7.3f %7.3f %6zu", r.bytes, r.count, name_of(type), redop,
               r.impl.c_str(), r.out_of_place.time_us, r.out_of_place.algbw, r.out_of_place.busbw,
               r.out_of_place.wrong);
  if (in_place)
    std::fprintf(out, " %10.2f %7.3f %7.3f %6zu", r.in_place.time_us, r.in_place.algbw, r.in_place.busbw,
                 r.in_place.wrong);
  std::fprintf(out, "\n");
  std::fflush(out);
}

std::size_t validate(Communicator& comm, const Implementation& impl, const HarnessOptions& o, std::size_t count,
                     const Buffer& input, Buffer& send, Buffer& recv, bool in_place, const std::vector<char>& expect,
                     const std::vector<double>& tol) {
  const std::size_t bytes = count * size_of(o.type);
  comm.copy(send.data(), input.data(), bytes);
  comm::fill_bytes(recv.data(), recv.space(), 0xff, bytes);  // NaN / -1 garbage: untouched output shows
  if (in_place) comm.copy(recv.data(), input.data(), bytes);
  impl.run(in_place ? recv.data() : send.data(), recv.data(), count, o.type, o.op, comm);
  std::vector<char> got(bytes);
  comm::copy(got.data(), MemorySpace::host, recv.data(), recv.space(), bytes);
  double wrong = static_cast<double>(count_wrong(got.data(), expect.data(), &tol, count, o.type));
  double total = 0;
  comm.library_allreduce(&wrong, &total, 1, DataType::f64, RedOp::sum);
  return static_cast<std::size_t>(total);
}

void print_header(std::FILE* out, const Communicator& comm, const HarnessOptions& o) {
  std::fprintf(out, "# all_reduce  ranks %d  backend %s  memory %s  data %s\n", comm.size(), comm.backend_name(),
               name_of(comm.memory_space()), name_of(o.data));
  std::fprintf(out, "#  minBytes %zu maxBytes %zu step: %s warmup iters: %d iters: %d validation: %d\n", o.min_bytes,
               o.max_bytes,
               o.step_bytes ? (std::to_string(o.step_bytes) + "(bytes)").c_str()
                            : (std::to_string(o.step_factor) + "(factor)").c_str(),
               o.warmup, o.iters, o.check ? 1 : 0);
  std::fprintf(out, "#  time = median over iterations of the maximum over ranks; busbw = algbw * 2(n-1)/n\n#\n");
  std::fprintf(out, "#%68s%34s\n", "out-of-place", "in-place");
  std::fprintf(out, "#%11s %13s %8s %6s %10s %10s %7s %7s %6s %10s %7s %7s %6s\n", "size", "count", "type", "redop",
               "impl", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::fprintf(out, "#%11s %13s %8s %6s %10s %10s %7s %7s %6s %10s %7s %7s %6s\n", "(B)", "(elements)", "", "", "",
               "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(out);
}

}  // namespace

std::vector<Result> run_allreduce_sweep(Communicator& comm, const std::vector<Implementation>& impls,
                                        const HarnessOptions& o, std::FILE* out) {
  if (comm.rank() != 0) out = nullptr;
  if (out) print_header(out, comm, o);
  const std::size_t elem = size_of(o.type);
  const double factor = allreduce_bus_factor(comm.size());
  std::vector<Result> results;
  for (std::size_t bytes : sweep_sizes(o)) {
    const std::size_t count = bytes / elem;
    Buffer input = comm.allocate(bytes), send = comm.allocate(bytes), recv = comm.allocate(bytes);
    {
      std::vector<char> host(bytes);
      fill_input(host.data(), count, o.type, o.data, o.op, comm.size(), comm.rank(), o.seed);
      comm::copy(input.data(), input.space(), host.data(), MemorySpace::host, bytes);
      comm.copy(send.data(), input.data(), bytes);
    }
    std::vector<char> expect;
    std::vector<double> tol;
    if (o.check) {
      expect.resize(bytes);
      expected_allreduce(expect.data(), &tol, count, o.type, o.data, o.op, comm.size(), o.seed);
    }
    std::vector<Result> rows(impls.size());
    for (int pass = 0; pass < (o.in_place ? 2 : 1); ++pass) {
      const bool in_place = pass == 1;
      std::vector<double> t = time_interleaved(comm, impls.size(), o, [&](std::size_t k) {
        void* dst = recv.data();
        const void* src = in_place ? recv.data() : send.data();
        if (in_place) comm.copy(dst, input.data(), bytes);  // fresh input for every in-place call
        comm.barrier();
        const double t0 = comm.wtime();
        impls[k].run(src, dst, count, o.type, o.op, comm);
        return comm.wtime() - t0;
      });
      for (std::size_t k = 0; k < impls.size(); ++k) {
        Timing& tm = in_place ? rows[k].in_place : rows[k].out_of_place;
        tm.time_us = t[k] * 1e6;
        tm.algbw = t[k] > 0 ? static_cast<double>(bytes) / t[k] / 1e9 : 0;
        tm.busbw = tm.algbw * factor;
        if (o.check) tm.wrong = validate(comm, impls[k], o, count, input, send, recv, in_place, expect, tol);
      }
    }
    for (std::size_t k = 0; k < impls.size(); ++k) {
      Result& r = rows[k];
      r.impl = impls[k].name;
      r.bytes = bytes;
      r.count = count;
      if (out) print_row(out, r, o.type, name_of(o.op), o.in_place);
      results.push_back(r);
    }
  }
  return results;
}

// ---- the other seven collectives ------------------------------------------------------------

namespace {

bool per_rank(Collective k) {
  return k == Collective::allgather || k == Collective::reduce_scatter || k == Collective::gather ||
         k == Collective::scatter || k == Collective::alltoall;
}

// Buffers of one implementation's run, laid out as NCCL expresses in place (only the root is
// in place for reduce, gather and scatter).
struct Layout {
  Buffer a, b;
  void* send = nullptr;
  void* recv = nullptr;
  std::size_t send_bytes = 0, recv_bytes = 0;
};

Layout make_layout(Communicator& comm, Collective k, std::size_t count, DataType type, int root, bool in_place) {
  const std::size_t elem = size_of(type), block = count * elem;
  const std::size_t r = static_cast<std::size_t>(comm.rank());
  Layout L;
  L.send_bytes = send_elements(k, count, comm.size()) * elem;
  L.recv_bytes = recv_elements(k, count, comm.size()) * elem;
  const bool rooted_only = k == Collective::reduce || k == Collective::gather || k == Collective::scatter;
  if (in_place && rooted_only && comm.rank() != root) in_place = false;
  if (!in_place) {
    L.a = comm.allocate(std::max<std::size_t>(L.send_bytes, 1));
    L.b = comm.allocate(std::max<std::size_t>(L.recv_bytes, 1));
    L.send = L.a.data();
    L.recv = L.b.data();
    return L;
  }
  L.a = comm.allocate(std::max<std::size_t>(std::max(L.send_bytes, L.recv_bytes), 1));
  char* base = static_cast<char*>(L.a.data());
  L.send = base;
  L.recv = base;
  if (k == Collective::allgather || k == Collective::gather) L.send = base + r * block;
  if (k == Collective::reduce_scatter || k == Collective::scatter) L.recv = base + r * block;
  return L;
}

bool holds_result(Collective k, const Communicator& comm, int root) {
  return !(k == Collective::reduce || k == Collective::gather) || comm.rank() == root;
}

}  // namespace

CollectiveImplementation library_implementation(const Communicator& comm, Collective kind) {
  return {comm.backend_name(), [kind](const void* s, void* r, std::size_t count, DataType t, RedOp op, int root,
                                      Communicator& c) { c.library({kind, s, r, count, t, op, root}); }};
}

double bus_factor(Collective kind, int nranks) {
  const double n = nranks;
  switch (kind) {
    case Collective::allreduce: return allreduce_bus_factor(nranks);
    case Collective::broadcast:
    case Collective::reduce: return 1.0;
    default: return n > 0 ? (n - 1) / n : 0.0;
  }
}

std::size_t collective_bytes(Collective kind, std::size_t count, DataType type, int nranks) {
  return count * size_of(type) * (per_rank(kind) ? static_cast<std::size_t>(nranks) : 1);
}

std::vector<Result> run_collective_sweep(Communicator& comm, Collective kind,
                                         const std::vector<CollectiveImplementation>& impls,
                                         const HarnessOptions& o, std::FILE* out) {
  const int n = comm.size();
  if (o.root < 0 || o.root >= n)
    COMM_THROW("-r " + std::to_string(o.root) + ": the root must be a rank 0.." + std::to_string(n - 1));
  if (comm.rank() != 0) out = nullptr;
  const std::size_t elem = size_of(o.type);
  const std::size_t nn = per_rank(kind) ? static_cast<std::size_t>(n) : 1;
  if (out) {
    std::fprintf(out, "# %s  ranks %d  root %d  backend %s  memory %s  data verifiable\n", name_of(kind), n, o.root,
                 comm.backend_name(), name_of(comm.memory_space()));
    std::fprintf(out, "#  size = bytes of the larger buffer; time = median over %d iterations of the maximum over "
                      "ranks; busbw = algbw * %.3f; #wrong = elements differing from the library's result\n#\n",
                 o.iters, bus_factor(kind, n));
    std::fprintf(out, "#%11s %13s %8s %6s %10s %10s %7s %7s %6s %10s %7s %7s %6s\n", "size", "count", "type", "redop",
                 "impl", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    std::fflush(out);
  }
  std::vector<Result> results;
  std::vector<std::size_t> seen;
  for (std::size_t size : sweep_sizes(o)) {
    const std::size_t count = size / elem / nn;
    if (count == 0 && size > 0) continue;
    const std::size_t bytes = count * elem * nn;
    if (std::find(seen.begin(), seen.end(), bytes) != seen.end()) continue;  // rounded onto an earlier size
    seen.push_back(bytes);
    // Inputs: every rank's send buffer (verifiable data: a reduction is exact in any order).
    const std::size_t send_n = send_elements(kind, count, n);
    std::vector<char> input(send_n * elem);
    fill_input(input.data(), send_n, o.type, DataMode::verifiable,
               kind == Collective::reduce || kind == Collective::reduce_scatter ? o.op : RedOp::max, n, comm.rank(),
               o.seed + static_cast<std::uint64_t>(kind));
    std::vector<Result> rows(impls.size());
    for (int pass = 0; pass < (o.in_place ? 2 : 1); ++pass) {
      const bool in_place = pass == 1;
      // The library's result on these inputs, the reference of #wrong.
      std::vector<char> want;
      if (o.check) {
        Layout L = make_layout(comm, kind, count, o.type, o.root, in_place);
        comm::copy(L.send, comm.memory_space(), input.data(), MemorySpace::host, input.size());
        comm.library({kind, L.send, L.recv, count, o.type, o.op, o.root});
        want.resize(L.recv_bytes);
        comm::copy(want.data(), MemorySpace::host, L.recv, comm.memory_space(), L.recv_bytes);
      }
      std::vector<Layout> layouts;
      for (std::size_t k = 0; k < impls.size(); ++k)
        layouts.push_back(make_layout(comm, kind, count, o.type, o.root, in_place));
      const std::vector<double> t = time_interleaved(comm, impls.size(), o, [&](std::size_t k) {
        Layout& L = layouts[k];
        comm::copy(L.send, comm.memory_space(), input.data(), MemorySpace::host, input.size());  // fresh input
        comm.barrier();
        const double t0 = comm.wtime();
        impls[k].run(L.send, L.recv, count, o.type, o.op, o.root, comm);
        return comm.wtime() - t0;
      });
      for (std::size_t k = 0; k < impls.size(); ++k) {
        const double med = t[k];
        Timing& tm = in_place ? rows[k].in_place : rows[k].out_of_place;
        tm.time_us = med * 1e6;
        tm.algbw = med > 0 ? static_cast<double>(bytes) / med / 1e9 : 0;
        tm.busbw = tm.algbw * bus_factor(kind, n);
        if (o.check) {
          // The last timed run left its result in place: compare it (fresh input each run).
          double wrong = 0, total = 0;
          if (holds_result(kind, comm, o.root)) {
            std::vector<char> got(layouts[k].recv_bytes);
            comm::copy(got.data(), MemorySpace::host, layouts[k].recv, comm.memory_space(), got.size());
            wrong = static_cast<double>(count_wrong(got.data(), want.data(), nullptr, got.size() / elem, o.type));
          }
          comm.library_allreduce(&wrong, &total, 1, DataType::f64, RedOp::sum);
          tm.wrong = static_cast<std::size_t>(total);
        }
      }
    }
    for (std::size_t k = 0; k < impls.size(); ++k) {
      Result& r = rows[k];
      r.impl = impls[k].name;
      r.bytes = bytes;
      r.count = count;
      if (out)
        print_row(out, r, o.type,
                  kind == Collective::reduce || kind == Collective::reduce_scatter ? name_of(o.op) : "none",
                  o.in_place);
      results.push_back(r);
    }
  }
  return results;
}

}  // namespace comm
