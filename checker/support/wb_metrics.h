/// @file
/// @brief What the Performance checks of the CUDA labs share: on sim, the memory traffic cusim's
/// analysis counts over the kernels a check runs; on a GPU, bandwidth as a ratio to a device copy
/// timed in the same run.
///
/// Sim:
///
///     wb::check::Traffic t;
///     WB_ASSERT(wb::check::measure([&] { return check_something(...); }, t));
///     WB_REQUIRE_ANALYSIS();          // NOT MEASURED where kernels are not instrumented
///     if (t.loads() > 4.0) FAIL() << ...;
///
/// A check whose body needs the analysis API at all starts with WB_SIM_METRICS_BEGIN() and
/// guards that body with `#if WB_HAVE_CUSIM_ANALYSIS`.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "wb_check.h"

#if defined(CUSIM) && __has_include(<cusim/analysis.h>)
#include <cusim/analysis.h>
#define WB_HAVE_CUSIM_ANALYSIS 1
#endif

#if !defined(CUSIM)
#include "wb/bandwidth.h"
#endif

namespace wb::check {

#if defined(CUSIM)
/// cusim's analysis metrics summed over every kernel launched during measure(): requests are
/// warp-level instructions, sectors the 32-byte pieces of memory they touch, wavefronts the
/// shared-memory passes (a bank conflict adds one). Declared on every sim build, so that a check
/// that ends NOT MEASURED without the analysis API still compiles; filled only through it.
struct Traffic {
  std::uint64_t launches = 0;
  std::uint64_t load_requests = 0, load_sectors = 0, store_requests = 0, store_sectors = 0;
  std::uint64_t bytes_read = 0, bytes_written = 0;
  std::uint64_t shared_bytes_read = 0, shared_bytes_written = 0;
  std::uint64_t shared_load_requests = 0, shared_load_wavefronts = 0;
  std::uint64_t shared_store_requests = 0, shared_store_wavefronts = 0;
  std::uint64_t atomics = 0, global_atomics = 0, shared_atomics = 0;

  static double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }
  /// Sectors per request of global loads and stores (1 for a warp's 32 bytes; 4 for 32 floats).
  double loads() const { return ratio(double(load_sectors), double(load_requests)); }
  double stores() const { return ratio(double(store_sectors), double(store_requests)); }
  /// Wavefronts per request of shared loads and stores (1 without bank conflicts).
  double shared_loads() const { return ratio(double(shared_load_wavefronts), double(shared_load_requests)); }
  double shared_stores() const { return ratio(double(shared_store_wavefronts), double(shared_store_requests)); }
  /// Shared wavefronts per 128 bytes requested: 1 without bank conflicts, whatever the access width.
  double shared_loads_per_128_bytes() const {
    return ratio(128.0 * double(shared_load_wavefronts), double(shared_bytes_read));
  }
  double shared_stores_per_128_bytes() const {
    return ratio(128.0 * double(shared_store_wavefronts), double(shared_bytes_written));
  }
  std::uint64_t shared_requests() const { return shared_load_requests + shared_store_requests; }
  /// Fraction of the bytes of the sectors moved that were requested.
  double load_efficiency() const { return ratio(double(bytes_read), 32.0 * double(load_sectors)); }
  double store_efficiency() const { return ratio(double(bytes_written), 32.0 * double(store_sectors)); }

#if WB_HAVE_CUSIM_ANALYSIS
  void add(const cusim::analysis::KernelMetrics& m) {
    launches += m.launches;
    load_requests += m.global_load_requests;
    load_sectors += m.global_load_sectors;
    store_requests += m.global_store_requests;
    store_sectors += m.global_store_sectors;
    bytes_read += m.global_bytes_read;
    bytes_written += m.global_bytes_written;
    shared_bytes_read += m.shared_bytes_read;
    shared_bytes_written += m.shared_bytes_written;
    shared_load_requests += m.shared_load_requests;
    shared_load_wavefronts += m.shared_load_wavefronts;
    shared_store_requests += m.shared_store_requests;
    shared_store_wavefronts += m.shared_store_wavefronts;
    atomics += m.atomics;
    global_atomics += m.global_atomics;
    shared_atomics += m.shared_atomics;
  }
#endif
};
#endif

#if WB_HAVE_CUSIM_ANALYSIS
/// Runs @p run (a correctness check of the code being measured) with the analysis counters reset
/// first, and adds the metrics of every kernel it launched to @p t. A correct run that loaded
/// nothing from global memory fails ("did its kernel run?"): no metric may pass by absence.
/// @p what names the code in that message.
inline testing::AssertionResult measure(const std::function<testing::AssertionResult()>& run, Traffic& t,
                                        std::string_view what = {}) {
  cusim::analysis::reset();
  testing::AssertionResult ok = run();
  std::uint64_t loads = 0;
  for (const auto& m : cusim::analysis::metrics()) {
    t.add(m);
    loads += m.global_load_requests;
  }
  if (ok && cusim::analysis::available() && loads == 0) {
    return testing::AssertionFailure() << what << (what.empty() ? "" : ": ")
                                       << "no global memory loads were measured; did its kernel run?";
  }
  return ok;
}
#endif

}  // namespace wb::check

/// In a sim metric check, after measure(): NOT MEASURED where the build's kernels carry no
/// analysis instrumentation (the counters would read 0).
#define WB_REQUIRE_ANALYSIS()                                                                              \
  if (!cusim::analysis::available()) {                                                                     \
    WB_NOT_MEASURED("this build's kernels are not instrumented for cusim analysis (WB_SIM_ANALYSIS=OFF)"); \
  }

/// First statement of a sim metric check: NOT MEASURED where cusim has no analysis API at all.
#if WB_HAVE_CUSIM_ANALYSIS
#define WB_SIM_METRICS_BEGIN()
#else
#define WB_SIM_METRICS_BEGIN() WB_NOT_MEASURED("this cusim build has no analysis API (cusim/analysis.h)")
#endif

/// After a check's run in a sim metric check whose run also compiles without the analysis API
/// (it then only checks the result): NOT MEASURED without the API, or without instrumentation.
#if WB_HAVE_CUSIM_ANALYSIS
#define WB_REQUIRE_METRICS() WB_REQUIRE_ANALYSIS()
#else
#define WB_REQUIRE_METRICS() WB_SIM_METRICS_BEGIN()
#endif
