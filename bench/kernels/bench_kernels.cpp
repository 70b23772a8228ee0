// bench_kernels: candidate kernels of the reference solutions, each timed beside the lab's
// baseline in one process, the way the lab's Performance check times it (median of 21 runs after 3
// warm-ups, L2 flushed before each run), in several rounds so that a drift between rounds shows.
// Every candidate is validated first (bit-exact on integer data, bit-identical to the reference
// where it computes in the reference's order, else within the lab check's own allowances); if one
// is wrong, the benchmark names it and times nothing.
//
//   bench_kernels [LAB...] [--rounds N] [--validate-only] [--with-known-wrong]
//
// --with-known-wrong adds a candidate per set that the validation must reject: one that skips the
// last element, drops the last plane, the last filter or the last image, or skips the last key
// (ctest bench.kernels_rejects_*).
// LAB: 01 (saxpy), 03 (reduce_sum), 07 (maxpool2d_forward, maxpool2d_backward,
// batchnorm_forward_training, conv2d_backward_data, conv2d_backward_filter), 07-dgrad or 07-wgrad
// (one of the latter two, timed against cuDNN), 08 (attention_forward_bf16, attention_bench.cpp);
// default: all. On the sim backend only the validation runs (times there measure the simulator):
// ctest bench.kernels.
// Results: one row per candidate with its ratio to the baseline (median of the rounds' medians,
// the lowest and highest round), also as CSV to $WB_BENCH_CSV when set. docs/perf/kernels.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <vector>

#if defined(WB_BENCH_ATTENTION)
#include "attention_bench.h"
#endif
#include "batchnorm_candidates.h"
#include "conv_candidates.h"
#include "convolution.h"
#include "batchnorm_reference.h"
#include "pooling_batchnorm.h"
#include "pooling_candidates.h"
#include "reduction.h"
#include "reduction_candidates.h"
#include "saxpy.h"
#include "saxpy_candidates.h"
#include "wb/wb.h"

#if defined(WB_BENCH_CUDNN)
#include "cudnn_baselines.h"  // lab 07's cuDNN baseline (cuda backend, when libcudnn was found)
#endif

namespace {

struct Candidate {
  std::string name;
  std::function<cudaError_t()> run;
  bool validated = true;  // false: computes nothing to compare (a ceiling); only timed
};

struct Options {
  std::vector<std::string> labs;
  int rounds = 3;
  bool validate_only = false;
  bool with_known_wrong = false;
};

FILE* csv_file() {
  static FILE* f = [] {
    const char* path = std::getenv("WB_BENCH_CSV");
    FILE* file = path != nullptr && *path != '\0' ? std::fopen(path, "w") : nullptr;
    if (file != nullptr) std::fprintf(file, "lab,candidate,flush_l2,median_ms,gb_per_s,ratio,ratio_low,ratio_high\n");
    return file;
  }();
  return f;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Integer data in [-2, 2]: every partial sum any order forms is an integer far below 2^24, so
// every correct reduction gives the exact sum.
std::vector<float> exact_data(int n, unsigned seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  unsigned x = seed * 2654435761u + 12345u;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(static_cast<int>((x >> 16) % 5u) - 2);
  }
  return v;
}

// The reduce_sum candidates over d_in (n floats) into d_out.
std::vector<Candidate> reduction_candidates(const float* d_in, int n, float* d_out, float* d_partials, int sms) {
  using namespace candidates;
  return {
      {"reduce_sum (reference)", [=] { return reduce_sum(d_in, n, d_out); }},
      {"version 5: 4 x SMs x 256", [=] { return reduce_sum_grid_stride(d_in, n, d_out, 4 * sms, 256); }},
      {"cleared by cudaMemsetAsync", [=] { return reduce_memset_init(d_in, n, d_out); }},
      {"2 blocks/SM x 1024", [=] { return reduce_grid(d_in, n, d_out, 2, 1024); }},
      {"8 blocks/SM x 256", [=] { return reduce_grid(d_in, n, d_out, 8, 256); }},
      {"1 float4 load/iteration", [=] { return reduce_one_load(d_in, n, d_out); }},
      {"8 float4 loads/iteration", [=] { return reduce_eight_loads(d_in, n, d_out); }},
      {"two passes, no atomics", [=] { return reduce_two_pass(d_in, n, d_out, d_partials); }},
      {"read only (the ceiling)", [=] { return read_ceiling(d_in, n, d_out); }, false},
  };
}

int multiprocessors() {
  int device = 0, sms = 1;
  WB_CUDA_CHECK(cudaGetDevice(&device));
  WB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// Runs @p c once to completion: "" when it succeeded, else the error's name.
std::string run_once(const Candidate& c) {
  const cudaError_t launched = c.run();
  const cudaError_t synced = launched == cudaSuccess ? cudaDeviceSynchronize() : launched;
  if (synced == cudaSuccess) return "";
  (void)cudaGetLastError();
  return cudaGetErrorName(synced);
}

// Every validated candidate of @p list run once after prepare(), its result judged by
// compare(candidate) ("" when right, else what is wrong); "" when all are right, else a line per
// wrong candidate: "  name, shape: what".
std::string validate_each(const std::vector<Candidate>& list, const std::string& shape,
                          const std::function<void()>& prepare,
                          const std::function<std::string(const Candidate&)>& compare) {
  std::string wrong;
  for (const Candidate& c : list) {
    if (!c.validated) continue;
    prepare();
    std::string why = run_once(c);
    if (why.empty()) why = compare(c);
    if (!why.empty()) wrong += "  " + c.name + ", " + shape + ": " + why + "\n";
  }
  return wrong;
}

// Runs each candidate once on exact data of size n; "" when all are right, else what was wrong.
std::string validate_reduction(int n, bool with_known_wrong) {
  const std::vector<float> host = exact_data(n, 7u + static_cast<unsigned>(n));
  long long exact = 0;
  for (float f : host) exact += static_cast<long long>(f);
  wb::DeviceBuffer<float> in{std::span<const float>(host)};
  wb::DeviceBuffer<float> out(1);
  wb::DeviceBuffer<float> partials(candidates::partial_floats());
  const int sms = multiprocessors();
  std::vector<Candidate> list = reduction_candidates(in.data(), n, out.data(), partials.data(), sms);
  if (with_known_wrong) {
    float* d_in = in.data();
    float* d_out = out.data();
    list.push_back({"known wrong: skips the last float", [=] { return reduce_sum(d_in, n > 0 ? n - 1 : 0, d_out); }});
  }
  return validate_each(
      list, "n = " + std::to_string(n),
      [&] { out.fill_bytes(0xFF); },  // NaN: a candidate that writes nothing is wrong
      [&](const Candidate&) {
        const float got = out.download()[0];
        return got == static_cast<float>(exact) ? std::string()
                                                : std::to_string(got) + " instead of " + std::to_string(exact);
      });
}

// Times every candidate of one set beside a device-to-device copy of @p copy_bytes (the lab's
// baseline), with and without the L2 flush, in options.rounds rounds; one row per candidate.
void time_set(const char* lab, const std::string& title, double bytes, std::size_t copy_bytes,
              const std::vector<Candidate>& list, const Options& options, const char* needs) {
  for (bool flush : {true, false}) {
    const wb::TimingOptions timing{.warmup = 3, .repetitions = 21, .flush_l2 = flush};
    std::vector<std::vector<double>> ratios(list.size()), ms(list.size());
    std::vector<double> copy_gbs;
    for (int round = 0; round < options.rounds; ++round) {
      const wb::Bandwidth copy = wb::device_copy_bandwidth(copy_bytes, timing);  // this round's baseline
      copy_gbs.push_back(copy.gb_per_s);
      for (std::size_t i = 0; i < list.size(); ++i) {
        const wb::Bandwidth b = wb::measure_bandwidth(bytes, [&] { WB_CUDA_CHECK(list[i].run()); }, timing);
        ratios[i].push_back(b.gb_per_s / copy.gb_per_s);
        ms[i].push_back(b.timing.median_ms);
      }
    }
    std::printf("\n# lab %s %s, %s; copy %.0f GB/s (median of %d rounds); %s\n", lab, title.c_str(),
                flush ? "L2 flushed before each run (as the check)" : "L2 not flushed", median(copy_gbs),
                options.rounds, needs);
    std::printf("%-34s %10s %10s %8s %14s\n", "candidate", "time (ms)", "GB/s", "x copy", "rounds low-high");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const double r = median(ratios[i]), t = median(ms[i]);
      const double lo = *std::min_element(ratios[i].begin(), ratios[i].end());
      const double hi = *std::max_element(ratios[i].begin(), ratios[i].end());
      const double gbs = bytes / (t * 1e6);
      std::printf("%-34s %10.3f %10.1f %8.3f %7.3f-%.3f\n", list[i].name.c_str(), t, gbs, r, lo, hi);
      if (FILE* f = csv_file()) {
        std::fprintf(f, "%s,\"%s\",%d,%.4f,%.1f,%.4f,%.4f,%.4f\n", lab, list[i].name.c_str(), flush ? 1 : 0, t, gbs, r,
                     lo, hi);
      }
    }
  }
}

void time_reduction(const Options& options) {
  constexpr int n = 1 << 26;  // the size of lab 03's Performance check
  const std::vector<float> host = exact_data(n, 701);
  wb::DeviceBuffer<float> in{std::span<const float>(host)};
  wb::DeviceBuffer<float> out(1);
  wb::DeviceBuffer<float> partials(candidates::partial_floats());
  const int sms = multiprocessors();
  // The check: a reduction reads 4n bytes, against a copy of 4n bytes (which moves 8n).
  time_set("03", "reduce_sum, n = 2^26 floats", 4.0 * n, 4 * static_cast<std::size_t>(n),
           reduction_candidates(in.data(), n, out.data(), partials.data(), sms), options,
           "the check needs 0.80 x copy with the flush (0.88 with the 10% margin)");
}

// ---- lab 01: saxpy -----------------------------------------------------------------------------------

// The saxpy candidates on x and y (n floats each), a = 0.5.
std::vector<Candidate> saxpy_candidates(int n, const float* x, float* y) {
  using namespace candidates;
  return {
      {"saxpy (reference: 1/thread, 256)", [=] { return saxpy(n, 0.5f, x, y); }},
      {"1/thread, blocks of 128", [=] { return saxpy_one_per_thread(n, 0.5f, x, y, 128); }},
      {"1/thread, blocks of 512", [=] { return saxpy_one_per_thread(n, 0.5f, x, y, 512); }},
      {"1/thread, blocks of 1024", [=] { return saxpy_one_per_thread(n, 0.5f, x, y, 1024); }},
      {"4/thread (float4: not the contract)", [=] { return saxpy_float4(n, 0.5f, x, y); }},
  };
}

// Runs each candidate once on integer data of size n (x even, so 0.5 x + y is exact); "" when all
// are right, else what was wrong.
std::string validate_saxpy(int n, bool with_known_wrong) {
  std::vector<float> x = exact_data(n, 11u + static_cast<unsigned>(n)), y0 = exact_data(n, 13u);
  for (float& v : x) v *= 2.0f;
  wb::DeviceBuffer<float> dx{std::span<const float>(x)}, dy(static_cast<std::size_t>(n));
  std::vector<Candidate> list = saxpy_candidates(n, dx.data(), dy.data());
  if (with_known_wrong) {
    const float* px = dx.data();
    float* py = dy.data();
    list.push_back({"known wrong: skips the last element", [=] { return saxpy(n > 0 ? n - 1 : 0, 0.5f, px, py); }});
  }
  return validate_each(list, "n = " + std::to_string(n), [&] { dy.upload(y0); }, [&](const Candidate&) {
    const std::vector<float> got = dy.download();
    for (int i = 0; i < n; ++i) {
      const float want = 0.5f * x[i] + y0[i];
      if (got[i] != want) {
        return "y[" + std::to_string(i) + "] = " + std::to_string(got[i]) + " instead of " + std::to_string(want);
      }
    }
    return std::string();
  });
}

void time_saxpy(const Options& options) {
  constexpr int n = 1 << 26;  // the size of lab 01's Performance check
  wb::DeviceBuffer<float> x{std::span<const float>(exact_data(n, 71))}, y{std::span<const float>(exact_data(n, 72))};
  // The check: saxpy moves 12n bytes (x and y read, y written), against a copy of 6n bytes (12n moved).
  time_set("01", "saxpy, n = 2^26 floats", 12.0 * n, 6 * static_cast<std::size_t>(n),
           saxpy_candidates(n, x.data(), y.data()), options,
           "the check needs 0.80 x copy with the flush (0.88 with the 10% margin)");
}

// ---- lab 07: maxpool2d_forward, maxpool2d_backward, batchnorm_forward_training -------------------------

PoolParams pool3x3s2(int N, int C, int H, int W, int pad_h, int pad_w) {
  return PoolParams{N, C, H, W, 3, 3, pad_h, pad_w, 2, 2};
}
PoolParams pool3x3s2(int N, int C, int H, int W, int pad) { return pool3x3s2(N, C, H, W, pad, pad); }

// Odd and even sizes, P and Q (a tile's second row or column missing), W a multiple of 4 or not
// (16-byte rows or not), padding 0 and 1 on either side and 2 above and below, the timed plane.
const PoolParams kPoolShapes[] = {pool3x3s2(2, 3, 9, 9, 1),       pool3x3s2(2, 3, 10, 11, 1),
                                  pool3x3s2(1, 3, 9, 10, 0),      pool3x3s2(1, 2, 8, 8, 0),
                                  pool3x3s2(2, 3, 12, 16, 1),     pool3x3s2(1, 2, 10, 12, 0, 1),
                                  pool3x3s2(1, 2, 11, 8, 1, 0),   pool3x3s2(1, 2, 9, 12, 2, 1),
                                  pool3x3s2(1, 2, 112, 112, 0),   pool3x3s2(1, 2, 112, 112, 1)};

std::string pool_shape(const PoolParams& p) {
  return "N=" + std::to_string(p.N) + " C=" + std::to_string(p.C) + " " + std::to_string(p.H) + "x" +
         std::to_string(p.W) + " pad " + std::to_string(p.pad_h) +
         (p.pad_w == p.pad_h ? "" : "x" + std::to_string(p.pad_w));
}

std::size_t pool_in_size(const PoolParams& p) { return static_cast<std::size_t>(p.N) * p.C * p.H * p.W; }
std::size_t pool_out_size(const PoolParams& p) {
  return static_cast<std::size_t>(p.N) * p.C * pool_out_h(p) * pool_out_w(p);
}

// Planes of five kinds in turn: uniform floats; integers in [-8, 8] and the values 1 and 2 (ties:
// the first maximum in row-major order wins); negative integers (padding never wins); -inf, NaN
// and 0 (a window of -inf only keeps its first pixel, NaN never wins).
std::vector<float> pool_input(const PoolParams& p, std::uint64_t seed) {
  std::vector<float> x(pool_in_size(p));
  wb::Random r(seed);
  const std::size_t plane = static_cast<std::size_t>(p.H) * p.W;
  for (std::size_t i = 0; i < x.size(); ++i) {
    switch (i / plane % 5) {
      case 0: x[i] = static_cast<float>(-1.0 + 2.0 * r.next_unit_double()); break;
      case 1: x[i] = static_cast<float>(r.next_int(-8, 8)); break;
      case 2: x[i] = static_cast<float>(r.next_int(1, 2)); break;
      case 3: x[i] = static_cast<float>(r.next_int(-100, -1)); break;
      default: {
        const float special[] = {-INFINITY, -INFINITY, NAN, 0.0f};
        x[i] = special[r.next_int(0, 3)];
      }
    }
  }
  return x;
}

std::vector<Candidate> pool_forward_candidates(const PoolParams& p, const float* x, float* y, int* argmax) {
  using candidates::PoolForwardShape;
  auto tiles = [=](PoolForwardShape shape) {
    return [=] { return candidates::maxpool_forward_tiles(p, x, y, argmax, shape); };
  };
  return {
      {"maxpool2d_forward (reference)", [=] { return maxpool2d_forward(p, x, y, argmax); }},
      {"1x2 outputs/thread", tiles({.rows = 1})},
      {"2x2 outputs/thread", tiles({.rows = 2})},
      {"2x2, edge column by shuffle", tiles({.rows = 2, .shuffle = true})},
      {"2x2, 2 tiles/iteration, one wave", tiles({.rows = 2, .items = 2, .one_wave = true})},
  };
}

// Every candidate's y and argmax against the reference's, bit for bit; "" when all are right.
std::string validate_pool_forward(const PoolParams& p, bool with_known_wrong) {
  const std::size_t in = pool_in_size(p), out = pool_out_size(p);
  const std::vector<float> x_host = pool_input(p, 41 + in);
  wb::DeviceBuffer<float> x{std::span<const float>(x_host)}, y(out, 64);
  wb::DeviceBuffer<int> argmax(out, 64);
  WB_CUDA_CHECK(maxpool2d_forward(p, x.data(), y.data(), argmax.data()));
  WB_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> want_y = y.download();
  const std::vector<int> want_at = argmax.download();
  std::vector<Candidate> list = pool_forward_candidates(p, x.data(), y.data(), argmax.data());
  if (with_known_wrong) {
    const float* d_x = x.data();
    float* d_y = y.data();
    int* d_at = argmax.data();
    list.push_back({"known wrong: skips the last plane", [=] {
                      PoolParams fewer = p;
                      fewer.N = p.N * p.C - 1;
                      fewer.C = 1;
                      return maxpool2d_forward(fewer, d_x, d_y, d_at);
                    }});
  }
  return validate_each(
      list, pool_shape(p),
      [&] {
        y.fill_bytes(0xFF);  // NaN and -1: an output nobody writes is wrong
        argmax.fill_bytes(0xFF);
      },
      [&](const Candidate&) {
        const std::vector<float> got_y = y.download();
        const std::vector<int> got_at = argmax.download();
        std::size_t bad = 0, first = 0;
        for (std::size_t o = 0; o < out; ++o) {
          const bool same = std::memcmp(&got_y[o], &want_y[o], sizeof(float)) == 0 && got_at[o] == want_at[o];
          if (!same && bad++ == 0) first = o;
        }
        std::string why;
        if (bad != 0) {
          why = std::to_string(bad) + " outputs differ from the reference's, the first y[" + std::to_string(first) +
                "] = " + std::to_string(got_y[first]) + " at " + std::to_string(got_at[first]) + " instead of " +
                std::to_string(want_y[first]) + " at " + std::to_string(want_at[first]);
        }
        if (!y.check_guards().intact() || !argmax.check_guards().intact()) {
          why += std::string(why.empty() ? "" : "; ") + "wrote outside y or argmax";
        }
        return why;
      });
}

std::vector<Candidate> pool_backward_candidates(const PoolParams& p, const float* dy, const int* argmax, float* dx) {
  using candidates::maxpool_backward_blocks;
  return {
      {"maxpool2d_backward (reference)", [=] { return maxpool2d_backward(p, dy, argmax, dx); }},
      {"2x2 dx block/thread, 1 plane", [=] { return maxpool_backward_blocks(p, dy, argmax, dx, 1); }},
      {"2x2 dx block/thread, 2 planes", [=] { return maxpool_backward_blocks(p, dy, argmax, dx, 2); }},
      {"2x2 dx block/thread, 4 planes", [=] { return maxpool_backward_blocks(p, dy, argmax, dx, 4); }},
  };
}

// Every candidate against the host's dx for argmax from the reference forward on random x and
// integer dy (every order of adding gives the same sum); "" when all are right.
std::string validate_pool_backward(const PoolParams& p, bool with_known_wrong) {
  const int P = pool_out_h(p), Q = pool_out_w(p);
  const std::size_t in = pool_in_size(p), out = pool_out_size(p);
  const std::vector<float> x_host = wb::random_floats(in, 31 + in);
  std::vector<float> dy_host = exact_data(static_cast<int>(out), 37u + static_cast<unsigned>(out));
  wb::DeviceBuffer<float> x{std::span<const float>(x_host)}, y(out), dx(in, 64);
  wb::DeviceBuffer<float> dy{std::span<const float>(dy_host)};
  wb::DeviceBuffer<int> argmax(out);
  WB_CUDA_CHECK(maxpool2d_forward(p, x.data(), y.data(), argmax.data()));
  WB_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<int> chosen = argmax.download();
  std::vector<float> want(in, 0.0f);
  for (std::size_t plane = 0; plane < static_cast<std::size_t>(p.N) * p.C; ++plane) {
    for (std::size_t o = 0; o < static_cast<std::size_t>(P) * Q; ++o) {
      want[plane * p.H * p.W + chosen[plane * P * Q + o]] += dy_host[plane * P * Q + o];
    }
  }
  std::vector<Candidate> list = pool_backward_candidates(p, dy.data(), argmax.data(), dx.data());
  if (with_known_wrong) {
    const float* d_dy = dy.data();
    const int* d_arg = argmax.data();
    float* d_dx = dx.data();
    list.push_back({"known wrong: drops the last plane", [=] {
                      PoolParams fewer = p;
                      fewer.N = p.N * p.C - 1;
                      fewer.C = 1;
                      return maxpool2d_backward(fewer, d_dy, d_arg, d_dx);
                    }});
  }
  return validate_each(
      list, pool_shape(p), [&] { dx.fill_bytes(0xFF); },  // NaN: a pixel nobody writes is wrong
      [&](const Candidate&) {
        const std::vector<float> got = dx.download();
        std::size_t bad = 0, first = 0;
        for (std::size_t k = 0; k < in; ++k) {
          if (!(got[k] == want[k]) && bad++ == 0) first = k;
        }
        std::string why;
        if (bad != 0) {
          why = std::to_string(bad) + " dx values wrong, the first dx[" + std::to_string(first) +
                "] = " + std::to_string(got[first]) + " instead of " + std::to_string(want[first]);
        }
        if (!dx.check_guards().intact()) why += std::string(why.empty() ? "" : "; ") + "wrote outside dx";
        return why;
      });
}

// Batch norm: the check's shapes (M = 2 .. 150001, C up to 300, planes odd and multiples of 4) and
// the Performance check's own correctness shape; the check's inputs, statistics and allowances
// (checker/labs/07-convolution/batchnorm_reference.h).
using lab07::BnShape;
const BnShape kBnShapes[] = {{2, 3, 1},  {1, 4, 2},    {3, 1, 5},     {4, 5, 49},     {2, 3, 64},
                             {5, 7, 12}, {2, 300, 9},  {8, 2, 1000},  {4, 3, 16384},  {1, 2, 150001},
                             {8, 16, 3136}};

std::vector<Candidate> batchnorm_candidates(const candidates::BatchNormTraining& a) {
  using candidates::BatchNormStats;
  return {
      {"batchnorm_forward_training (ref.)",
       [=] {
         return batchnorm_forward_training(a.N, a.C, a.HW, a.x, a.gamma, a.beta, a.momentum, a.eps, a.y, a.save_mean,
                                           a.save_rstd, a.running_mean, a.running_var, a.workspace);
       }},
      {"two kernels, one-wave statistics", [=] { return candidates::batchnorm_training_two_kernels(a); }},
      {"cooperative, Welford",
       [=] { return candidates::batchnorm_training_cooperative(a, BatchNormStats::welford); }},
      {"cooperative, shifted sums",
       [=] { return candidates::batchnorm_training_cooperative(a, BatchNormStats::shifted_sums); }},
      {"a block of 768 per channel", [=] { return candidates::batchnorm_training_block_per_channel(a); }},
  };
}

// A batch-norm case on the device: the check's case (inputs), the outputs (guarded) and the host's
// statistics.
struct BnCase {
  lab07::BnCase host;
  std::size_t n, C;
  std::vector<lab07::ChannelStats> st;
  wb::DeviceBuffer<float> x, gamma, beta, y, mean, rstd, rm, rv, workspace;

  explicit BnCase(const BnShape& shape)
      : host(lab07::make_bn_case(shape, 0, 53)), n(host.size()), C(static_cast<std::size_t>(host.C)) {
    for (int c = 0; c < host.C; ++c) st.push_back(lab07::channel_stats(host, c));
    x = wb::DeviceBuffer<float>(std::span<const float>(host.x));
    gamma = wb::DeviceBuffer<float>(std::span<const float>(host.gamma));
    beta = wb::DeviceBuffer<float>(std::span<const float>(host.beta));
    for (wb::DeviceBuffer<float>* b : {&y, &mean, &rstd, &rm, &rv}) *b = wb::DeviceBuffer<float>(b == &y ? n : C, 64);
    workspace = wb::DeviceBuffer<float>(batchnorm_workspace_floats(host.C), 64);
  }
  std::string shape() const { return lab07::bn_shape(host.N, host.C, host.HW); }
  candidates::BatchNormTraining args() {
    return {host.N,      host.C,   host.HW,     x.data(),    gamma.data(), beta.data(), lab07::kMomentum,
            lab07::kEps, y.data(), mean.data(), rstd.data(), rm.data(),    rv.data(),   workspace.data()};
  }
  // Before a run: outputs never written read as NaN, the running statistics as the case's, the
  // workspace as @p workspace_fill (what an earlier call left there).
  void prepare(unsigned char workspace_fill) {
    for (wb::DeviceBuffer<float>* b : {&y, &mean, &rstd}) b->fill_bytes(0xFF);
    rm.upload(std::span<const float>(host.running_mean));
    rv.upload(std::span<const float>(host.running_var));
    workspace.fill_bytes(workspace_fill);
  }
  // What the run left: y, save_mean, save_rstd, running_mean, running_var.
  std::vector<std::vector<float>> outputs() const {
    return {y.download(), mean.download(), rstd.download(), rm.download(), rv.download()};
  }
  // "" when @p got (as outputs()) is within the check's allowances and nothing outside the
  // outputs was written; else the first array that is not, with its first wrong value.
  std::string mismatch(const std::vector<std::vector<float>>& got) const {
    struct Rule {
      const char* name;
      std::function<lab07::Want(std::size_t)> want;
    };
    const Rule rules[] = {
        {"y", [&](std::size_t i) { return lab07::bn_y(host, st[i / host.HW % C], i); }},
        {"save_mean", [&](std::size_t c) { return lab07::Want{st[c].mean, st[c].mean_allowed}; }},
        {"save_rstd", [&](std::size_t c) { return lab07::Want{st[c].rstd, st[c].rstd_allowed}; }},
        {"running_mean", [&](std::size_t c) { return lab07::bn_running_mean(host, st[c], static_cast<int>(c)); }},
        {"running_var", [&](std::size_t c) { return lab07::bn_running_var(host, st[c], static_cast<int>(c)); }},
    };
    for (std::size_t a = 0; a < got.size(); ++a) {
      const Rule& rule = rules[a];
      std::size_t bad = 0, first = 0;
      for (std::size_t i = 0; i < got[a].size(); ++i) {
        const lab07::Want w = rule.want(i);
        if (!(std::fabs(got[a][i] - w.value) <= w.allowed) && bad++ == 0) first = i;
      }
      if (bad != 0) {
        const lab07::Want w = rule.want(first);
        return std::to_string(bad) + " " + rule.name + " values wrong, the first " + rule.name + "[" +
               std::to_string(first) + "] = " + std::to_string(got[a][first]) + " instead of " +
               std::to_string(w.value) + " (allowed difference " + std::to_string(w.allowed) + ")";
      }
    }
    for (const wb::DeviceBuffer<float>* b : {&y, &mean, &rstd, &rm, &rv, &workspace}) {
      if (!b->check_guards().intact()) return "wrote outside an output or the workspace";
    }
    return "";
  }
};

// Every candidate within the check's allowances, then run again on a workspace of other bytes
// with the same bits; "" when all are right.
std::string validate_batchnorm(const BnShape& shape, bool with_known_wrong) {
  BnCase b(shape);
  const candidates::BatchNormTraining a = b.args();
  std::vector<Candidate> list = batchnorm_candidates(a);
  if (with_known_wrong) {
    list.push_back({"known wrong: drops the last image", [=] {
                      return batchnorm_forward_training(a.N - 1, a.C, a.HW, a.x, a.gamma, a.beta, a.momentum, a.eps,
                                                        a.y, a.save_mean, a.save_rstd, a.running_mean, a.running_var,
                                                        a.workspace);
                    }});
  }
  return validate_each(list, b.shape(), [&] { b.prepare(0xFF); }, [&](const Candidate& c) {
    const std::vector<std::vector<float>> first = b.outputs();
    if (std::string why = b.mismatch(first); !why.empty()) return why;
    b.prepare(0x00);
    if (const std::string error = run_once(c); !error.empty()) return "run 2: " + error;
    const std::vector<std::vector<float>> again = b.outputs();
    for (std::size_t k = 0; k < again.size(); ++k) {
      if (std::memcmp(again[k].data(), first[k].data(), again[k].size() * sizeof(float)) != 0) {
        return std::string("run 2, the workspace holding other bytes, gave other bits");
      }
    }
    return std::string();
  });
}

void time_pool_forward(const Options& options) {
  const PoolParams p = pool3x3s2(32, 64, 112, 112, 1);  // lab 07's Performance.PoolBandwidth
  const std::size_t in = pool_in_size(p), out = pool_out_size(p);
  wb::DeviceBuffer<float> x{std::span<const float>(wb::random_floats(in, 2302))};
  wb::DeviceBuffer<float> y(out);
  wb::DeviceBuffer<int> argmax(out);
  const double bytes = 4.0 * in + 8.0 * out;  // x read, y and argmax written (the check's count)
  time_set("07", "maxpool2d_forward 3x3/2 pad 1, 32x64x112x112", bytes, static_cast<std::size_t>(bytes / 2),
           pool_forward_candidates(p, x.data(), y.data(), argmax.data()), options,
           "the check needs 0.80 x copy (0.88 with the 10% margin)");
}

void time_pool_backward(const Options& options) {
  const PoolParams p = pool3x3s2(32, 64, 112, 112, 1);  // lab 07's Performance.PoolBandwidth
  const std::size_t in = pool_in_size(p), out = pool_out_size(p);
  wb::DeviceBuffer<float> x{std::span<const float>(wb::random_floats(in, 2302))};
  wb::DeviceBuffer<float> dy{std::span<const float>(wb::random_floats(out, 2303))};
  wb::DeviceBuffer<float> y(out), dx(in);
  wb::DeviceBuffer<int> argmax(out);
  WB_CUDA_CHECK(maxpool2d_forward(p, x.data(), y.data(), argmax.data()));
  WB_CUDA_CHECK(cudaDeviceSynchronize());
  const double bytes = 8.0 * out + 4.0 * in;  // dy and argmax read, dx written (the check's count)
  time_set("07", "maxpool2d_backward 3x3/2 pad 1, 32x64x112x112", bytes, static_cast<std::size_t>(bytes / 2),
           pool_backward_candidates(p, dy.data(), argmax.data(), dx.data()), options,
           "the check needs 0.80 x copy (0.88 with the 10% margin)");
}

void time_batchnorm(const Options& options) {
  constexpr int N = 32, C = 256, HW = 56 * 56;  // lab 07's Performance.BatchNormBandwidth
  const std::size_t n = static_cast<std::size_t>(N) * C * HW;
  wb::DeviceBuffer<float> x{std::span<const float>(wb::random_floats(n, 2403))};
  wb::DeviceBuffer<float> gamma{std::span<const float>(wb::random_floats(C, 2405, 0.5f, 1.5f))};
  wb::DeviceBuffer<float> beta{std::span<const float>(wb::random_floats(C, 2406))};
  wb::DeviceBuffer<float> rm{std::span<const float>(wb::random_floats(C, 2407))};
  wb::DeviceBuffer<float> rv{std::span<const float>(wb::random_floats(C, 2408, 0.5f, 2.0f))};
  wb::DeviceBuffer<float> y(n), mean(C), rstd(C), workspace(batchnorm_workspace_floats(C));
  const candidates::BatchNormTraining a{N,        C,           HW,          x.data(),  gamma.data(), beta.data(),
                                        lab07::kMomentum, lab07::kEps, y.data(), mean.data(), rstd.data(),
                                        rm.data(), rv.data(),   workspace.data()};
  const double bytes = 12.0 * n;  // x read twice, y written (the check's count)
  time_set("07", "batchnorm_forward_training, 32x256x56x56", bytes, static_cast<std::size_t>(bytes / 2),
           batchnorm_candidates(a), options, "the check needs 0.80 x copy (0.88 with the 10% margin)");
}

// ---- lab 07: conv2d_backward_data (dgrad) and conv2d_backward_filter (wgrad) --------------------------

enum class ConvPass { kData, kFilter };

const char* pass_name(ConvPass pass) { return pass == ConvPass::kData ? "dgrad" : "wgrad"; }

// Device operands of both passes (dx and dw are the outputs; workspace: wgrad's slices).
struct ConvOperands {
  const float *x, *w, *dy;
  float *dx, *dw, *workspace;
};

std::vector<Candidate> conv_candidates(ConvPass pass, const ConvParams& p, const ConvOperands& o) {
  using candidates::DgradTile;
  using candidates::WgradTile;
  if (pass == ConvPass::kData) {
    auto taps_inner = [=](DgradTile tile) {
      return [=] { return candidates::dgrad_taps_inner(p, o.dy, o.w, o.dx, tile); };
    };
    return {
        {"conv2d_backward_data (reference)", [=] { return conv2d_backward_data(p, o.dy, o.w, o.dx); }},
        {"taps inner, 64x64 8x4 BK 8", taps_inner(DgradTile::k64x64_8x4_bk8)},
        {"taps inner, 128x64 8x4 BK 8", taps_inner(DgradTile::k128x64_8x4_bk8)},
        {"taps inner, 64x128 8x8 BK 8", taps_inner(DgradTile::k64x128_8x8_bk8)},
        {"taps inner, 64x64 8x4 BK 16", taps_inner(DgradTile::k64x64_8x4_bk16)},
    };
  }
  auto split = [=](WgradTile tile) {
    return [=] { return candidates::wgrad_split(p, o.x, o.dy, o.dw, o.workspace, tile); };
  };
  return {
      {"conv2d_backward_filter (reference)", [=] { return conv2d_backward_filter(p, o.x, o.dy, o.dw, o.workspace); }},
      {"whole waves, 128x64 8x8 BK 16", split(WgradTile::k128x64_8x8_bk16)},
      {"whole waves, 64x64 8x4 BK 16", split(WgradTile::k64x64_8x4_bk16)},
  };
}

std::string describe(const ConvParams& p) {
  std::string text = "N=" + std::to_string(p.N) + " C=" + std::to_string(p.C) + " " + std::to_string(p.H) + "x" +
                     std::to_string(p.W) + " K=" + std::to_string(p.K) + " " + std::to_string(p.R) + "x" +
                     std::to_string(p.S);
  text += " pad " + std::to_string(p.pad_h) + "," + std::to_string(p.pad_w);
  text += " stride " + std::to_string(p.stride_h) + "," + std::to_string(p.stride_w);
  return text + " dil " + std::to_string(p.dilation_h) + "," + std::to_string(p.dilation_w);
}

struct ConvSizes {
  std::size_t x, w, y;
};

ConvSizes sizes_of(const ConvParams& p) {
  return {static_cast<std::size_t>(p.N) * p.C * p.H * p.W, static_cast<std::size_t>(p.K) * p.C * p.R * p.S,
          static_cast<std::size_t>(p.N) * p.K * conv_out_h(p) * conv_out_w(p)};
}

// dx (kData) or dw (kFilter) on the host, exactly: integer products summed in 64 bits.
std::vector<float> host_backward(ConvPass pass, const ConvParams& p, const std::vector<float>& x,
                                 const std::vector<float>& w, const std::vector<float>& dy) {
  const ConvSizes n_of = sizes_of(p);
  const int P = conv_out_h(p), Q = conv_out_w(p);
  std::vector<long long> sum(pass == ConvPass::kData ? n_of.x : n_of.w, 0);
  for (int n = 0; n < p.N; ++n) {
    for (int k = 0; k < p.K; ++k) {
      for (int op = 0; op < P; ++op) {
        for (int oq = 0; oq < Q; ++oq) {
          const auto g = static_cast<long long>(dy[((static_cast<std::size_t>(n) * p.K + k) * P + op) * Q + oq]);
          for (int c = 0; c < p.C; ++c) {
            for (int r = 0; r < p.R; ++r) {
              const int h = op * p.stride_h - p.pad_h + r * p.dilation_h;
              if (h < 0 || h >= p.H) continue;
              for (int t = 0; t < p.S; ++t) {
                const int v = oq * p.stride_w - p.pad_w + t * p.dilation_w;
                if (v < 0 || v >= p.W) continue;
                const std::size_t x_at = ((static_cast<std::size_t>(n) * p.C + c) * p.H + h) * p.W + v;
                const std::size_t w_at = ((static_cast<std::size_t>(k) * p.C + c) * p.R + r) * p.S + t;
                if (pass == ConvPass::kData) {
                  sum[x_at] += g * static_cast<long long>(w[w_at]);
                } else {
                  sum[w_at] += g * static_cast<long long>(x[x_at]);
                }
              }
            }
          }
        }
      }
    }
  }
  return std::vector<float>(sum.begin(), sum.end());
}

// Every candidate of @p pass against the host's exact output for integer x, w and dy in [-2, 2]
// (every sum, in any order, is an integer below 2^24, so a right candidate gives it exactly); ""
// when all are right.
std::string validate_conv(ConvPass pass, const ConvParams& p, bool with_known_wrong) {
  const ConvSizes n_of = sizes_of(p);
  const std::vector<float> x_host = exact_data(static_cast<int>(n_of.x), 47u + static_cast<unsigned>(n_of.x));
  const std::vector<float> w_host = exact_data(static_cast<int>(n_of.w), 43u + static_cast<unsigned>(n_of.w));
  const std::vector<float> dy_host = exact_data(static_cast<int>(n_of.y), 41u + static_cast<unsigned>(n_of.y));
  const std::vector<float> want = host_backward(pass, p, x_host, w_host, dy_host);
  wb::DeviceBuffer<float> x{std::span<const float>(x_host)}, w{std::span<const float>(w_host)},
      dy{std::span<const float>(dy_host)};
  wb::DeviceBuffer<float> out(want.size(), 64), workspace(conv2d_backward_filter_workspace_floats(p));
  const ConvOperands o{x.data(), w.data(), dy.data(), out.data(), out.data(), workspace.data()};
  std::vector<Candidate> list = conv_candidates(pass, p, o);
  if (with_known_wrong && pass == ConvPass::kData) {
    ConvParams fewer = p;  // the mistake: the sum over filters stops one short (dy read as K - 1 planes)
    fewer.K = p.K - 1;
    list.push_back(
        {"known wrong: drops the last filter", [=] { return conv2d_backward_data(fewer, o.dy, o.w, o.dx); }});
  }
  if (with_known_wrong && pass == ConvPass::kFilter) {
    ConvParams fewer = p;  // the mistake: the sum over images stops one short
    fewer.N = p.N - 1;
    list.push_back({"known wrong: drops the last image",
                    [=] { return conv2d_backward_filter(fewer, o.x, o.dy, o.dw, o.workspace); }});
  }
  const std::string shape = describe(p);
  const char* name = pass == ConvPass::kData ? "dx" : "dw";
  std::string wrong;
  for (const Candidate& c : list) {
    out.fill_bytes(0xFF);  // NaN: an element nobody writes is wrong
    if (const std::string error = run_once(c); !error.empty()) {
      wrong += "  " + c.name + ", " + shape + ": " + error + "\n";
      continue;
    }
    const std::vector<float> got = out.download();
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (!(got[i] == want[i]) && bad++ == 0) first = i;
    }
    if (bad != 0) {
      wrong += "  " + c.name + ", " + shape + ": " + std::to_string(bad) + " " + name + " values wrong, the first " +
               name + "[" + std::to_string(first) + "] = " + std::to_string(got[first]) + " instead of " +
               std::to_string(want[first]) + "\n";
    }
    if (!out.check_guards().intact()) wrong += "  " + c.name + ", " + shape + ": wrote outside " + name + "\n";
  }
  return wrong;
}

ConvParams conv(int N, int C, int H, int W, int K, int R, int S, int pad = 0, int stride = 1) {
  return {N, C, H, W, K, R, S, pad, pad, stride, stride, 1, 1};
}

// The shapes validated: the sim sizes of the check's 3 x 3 layers, then edges (C not a multiple of
// 4, H W not a multiple of 4, K not a multiple of a chunk, partial tiles, stride, dilation and
// asymmetric padding, a 1 x 9 filter); for wgrad also the 7 x 7 stride-2 stem, 1 x 1 filters and
// reductions long enough to split (N P Q = 4608, and 600 with rows of 5 pixels: splits that start
// mid-row, steps longer than a row). The dgrad candidates handle R S = 9 only.
std::vector<ConvParams> conv_validation_shapes(ConvPass pass) {
  std::vector<ConvParams> shapes = {
      conv(1, 64, 10, 10, 64, 3, 3, 1),        conv(1, 256, 4, 4, 256, 3, 3, 1),
      conv(2, 5, 9, 7, 6, 3, 3, 1),            {2, 68, 7, 6, 65, 3, 3, 2, 1, 2, 1, 1, 2},
      {1, 12, 11, 9, 17, 3, 3, 0, 2, 1, 2, 2, 1}, {1, 8, 6, 13, 9, 1, 9, 0, 4, 1, 1, 1, 1},
  };
  if (pass == ConvPass::kFilter) {
    for (const ConvParams& p : {conv(2, 3, 17, 13, 5, 7, 7, 3, 2), conv(2, 8, 9, 11, 70, 1, 1),
                                conv(8, 4, 24, 24, 8, 3, 3, 1), conv(24, 4, 5, 5, 8, 3, 3, 1)}) {
      shapes.push_back(p);
    }
  }
  return shapes;
}

#if defined(WB_BENCH_CUDNN)
// Times every candidate of @p pass beside cuDNN's cudnnConvolutionBackwardData / BackwardFilter on
// the check's three 3 x 3 layers (N = 32), as Performance.BackwardVsCudnn times them (median of 11
// runs after 2 warm-ups, no flush), in options.rounds rounds; one row per candidate with its speed
// as a multiple of cuDNN's.
void time_conv(ConvPass pass, const Options& options) {
  const wb::TimingOptions timing{.warmup = 2, .repetitions = 11};
  const struct {
    const char* name;
    ConvParams p;
  } layers[] = {{"conv2_x 3x3 C64 K64", conv(32, 64, 56, 56, 64, 3, 3, 1)},
                {"conv3_x 3x3 C128 K128", conv(32, 128, 28, 28, 128, 3, 3, 1)},
                {"conv4_x 3x3 C256 K256", conv(32, 256, 14, 14, 256, 3, 3, 1)}};
  for (const auto& layer : layers) {
    const ConvParams& p = layer.p;
    const ConvSizes n_of = sizes_of(p);
    wb::DeviceBuffer<float> x{std::span<const float>(wb::random_floats(n_of.x, 912))};
    wb::DeviceBuffer<float> w{std::span<const float>(wb::random_floats(n_of.w, 913))};
    wb::DeviceBuffer<float> dy{std::span<const float>(wb::random_floats(n_of.y, 914))};
    wb::DeviceBuffer<float> dx(n_of.x), dw(n_of.w), ref(pass == ConvPass::kData ? n_of.x : n_of.w);
    wb::DeviceBuffer<float> workspace(conv2d_backward_filter_workspace_floats(p));
    CudnnConv cudnn(p, CudnnConv::kNCHW);
    const std::function<void()> base = [&] {
      if (pass == ConvPass::kData) {
        cudnn.backward_data(dy.data(), w.data(), ref.data());
      } else {
        cudnn.backward_filter(x.data(), dy.data(), ref.data());
      }
    };
    base();  // the algorithm search, untimed
    const std::vector<Candidate> list =
        conv_candidates(pass, p, {x.data(), w.data(), dy.data(), dx.data(), dw.data(), workspace.data()});
    std::vector<std::vector<double>> ratios(list.size()), ms(list.size());
    std::vector<double> base_ms;
    for (int round = 0; round < options.rounds; ++round) {
      const double b = wb::time_median(base, timing).median_ms;
      base_ms.push_back(b);
      for (std::size_t i = 0; i < list.size(); ++i) {
        const double t = wb::time_median([&] { WB_CUDA_CHECK(list[i].run()); }, timing).median_ms;
        ratios[i].push_back(b / t);
        ms[i].push_back(t);
      }
    }
    const double flop = 2.0 * static_cast<double>(n_of.y) * p.C * p.R * p.S;
    // TFLOP/s count the direct convolution's 2 N K C R S P Q flops: cuDNN above the FP32 FMA peak
    // does fewer (Winograd, FFT).
    std::printf("\n# lab 07 %s, %s (N=32), no L2 flush (as the check); cuDNN (%s) %.3f ms, %.1f TFLOP/s (median "
                "of %d rounds); the check needs 0.50 x cuDNN (0.55 with the 10%% margin)\n",
                pass == ConvPass::kData ? "conv2d_backward_data" : "conv2d_backward_filter", layer.name,
                pass == ConvPass::kData ? cudnn.backward_data_algorithm() : cudnn.backward_filter_algorithm(),
                median(base_ms), flop / (median(base_ms) * 1e9), options.rounds);
    std::printf("%-38s %10s %10s %8s %14s\n", "candidate", "time (ms)", "TFLOP/s", "x cuDNN", "rounds low-high");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const double r = median(ratios[i]), t = median(ms[i]);
      const double lo = *std::min_element(ratios[i].begin(), ratios[i].end());
      const double hi = *std::max_element(ratios[i].begin(), ratios[i].end());
      std::printf("%-38s %10.3f %10.1f %8.3f %7.3f-%.3f\n", list[i].name.c_str(), t, flop / (t * 1e9), r, lo, hi);
      if (FILE* f = csv_file()) {
        std::fprintf(f, "07-%s,\"%s: %s\",0,%.4f,,%.4f,%.4f,%.4f\n", pass_name(pass), layer.name, list[i].name.c_str(),
                     t, r, lo, hi);
      }
    }
  }
}
#endif

// Validates the candidates of @p pass, then (cuda with cuDNN) times them: 0, or 1 when one is wrong.
int run_conv(ConvPass pass, const Options& options) {
  std::string wrong;
  for (const ConvParams& p : conv_validation_shapes(pass)) wrong += validate_conv(pass, p, options.with_known_wrong);
  if (!wrong.empty()) {
    std::printf("lab 07 %s candidates that are wrong (none is timed):\n%s", pass_name(pass), wrong.c_str());
    return 1;
  }
  std::printf("lab 07: every %s candidate is correct (%s, exact on integer data, %s, strides, dilations, partial "
              "tiles)\n",
              pass_name(pass), pass == ConvPass::kData ? "conv2d_backward_data" : "conv2d_backward_filter",
              pass == ConvPass::kData ? "3x3 and 1x9 filters" : "3x3, 1x9, 7x7 and 1x1 filters");
  if (options.validate_only) return 0;
#if defined(WB_BENCH_CUDNN)
  time_conv(pass, options);
#else
  std::printf("lab 07 %s: not timed (bench_kernels was built without cuDNN, the baseline)\n", pass_name(pass));
#endif
  return 0;
}

// A lab whose candidates take one vector of n elements: validated at n = 0 .. 2^20 + 3, then timed
// unless only validation was asked for; 1 when one is wrong (then nothing of the lab is timed).
int vector_group(const char* lab, const char* how, std::string (*validate)(int n, bool with_known_wrong),
                 void (*time)(const Options&), const Options& options) {
  std::string wrong;
  for (int n : {0, 1, 5, 1000, 4099, 65536 + 7, (1 << 20) + 3}) wrong += validate(n, options.with_known_wrong);
  if (!wrong.empty()) {
    std::printf("lab %s candidates that are wrong (nothing of lab %s is timed):\n%s", lab, lab, wrong.c_str());
    return 1;
  }
  std::printf("lab %s: every candidate is correct (%s, n = 0 .. 2^20+3)\n", lab, how);
  if (!options.validate_only) time(options);
  return 0;
}

int usage(const char* why) {
  std::fprintf(stderr, "bench_kernels: %s\nusage: bench_kernels [LAB...] [--rounds N] [--validate-only] "
                       "[--with-known-wrong]\n"
                       "LAB: 01, 03, 07, 07-dgrad, 07-wgrad, 08 (the labs with candidates; default: all)\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--validate-only") {
      options.validate_only = true;
    } else if (a == "--with-known-wrong") {
      options.with_known_wrong = true;
    } else if (a == "--rounds" && i + 1 < argc) {
      options.rounds = std::atoi(argv[++i]);
      if (options.rounds < 1 || options.rounds > 50) return usage("--rounds takes 1 to 50");
    } else if (a == "01" || a == "1" || a == "03" || a == "3" || a == "07" || a == "7" || a == "08" || a == "8") {
      options.labs.push_back(a.size() == 1 ? "0" + a : a);
    } else if (a == "07-dgrad" || a == "07-wgrad") {
      options.labs.push_back(a);
    } else {
      return usage(("no candidates for '" + a + "'").c_str());
    }
  }
  if (options.labs.empty()) options.labs = {"01", "03", "07", "08"};  // 07 includes 07-dgrad and 07-wgrad
  auto wants = [&](const char* lab) {
    return std::find(options.labs.begin(), options.labs.end(), lab) != options.labs.end();
  };
#if defined(CUSIM)
  options.validate_only = true;  // times on sim measure the simulator
#endif
  try {
    int status = 0;
    if (wants("01")) status |= vector_group("01", "exact", validate_saxpy, time_saxpy, options);
    if (wants("03")) status |= vector_group("03", "exact sums", validate_reduction, time_reduction, options);
    if (wants("07")) {
      std::string wrong;
      for (const PoolParams& p : kPoolShapes) {
        wrong += validate_pool_forward(p, options.with_known_wrong);
        wrong += validate_pool_backward(p, options.with_known_wrong);
      }
      for (const BnShape& s : kBnShapes) wrong += validate_batchnorm(s, options.with_known_wrong);
      if (!wrong.empty()) {
        std::printf("lab 07 pooling and batch-norm candidates that are wrong (none of them is timed):\n%s",
                    wrong.c_str());
        status = 1;
      } else {
        std::printf("lab 07: every pooling and batch-norm candidate is correct (maxpool2d_forward and "
                    "maxpool2d_backward bit-identical to the reference, 3x3 stride 2, pad 0 to 2, 8x8 .. 112x112; "
                    "batchnorm_forward_training within the check's allowances and reproducible, M = 2 .. 150001)\n");
        if (!options.validate_only) {
          time_pool_forward(options);
          time_pool_backward(options);
          time_batchnorm(options);
        }
      }
    }
    if (wants("07") || wants("07-dgrad")) status |= run_conv(ConvPass::kData, options);
    if (wants("07") || wants("07-wgrad")) status |= run_conv(ConvPass::kFilter, options);
    if (wants("08")) {
#if defined(WB_BENCH_ATTENTION)
      status |= attention_bench::run({.rounds = options.rounds, .validate_only = options.validate_only,
                                      .with_known_wrong = options.with_known_wrong});
#else
      std::printf("lab 08: not built (no solutions/08-attention)\n");
#endif
    }
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_kernels: %s\n", e.what());
    return 1;
  }
}
