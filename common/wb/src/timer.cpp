#include "wb/timer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include "wb/error.h"
#include "wb/timing_hooks.h"

namespace wb {

namespace detail {
namespace {
TimingHooks& hooks() {
  static TimingHooks installed;
  return installed;
}
}  // namespace
const TimingHooks& timing_hooks() { return hooks(); }
void set_timing_hooks(const TimingHooks& h) { hooks() = h; }
}  // namespace detail

namespace {

// Destroys the event pair on every path out of time_median().
struct EventPair {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  EventPair() {
    WB_CUDA_CHECK(cudaEventCreate(&start));
    WB_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    if (start != nullptr) (void)cudaEventDestroy(start);
    if (stop != nullptr) (void)cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

std::size_t l2_cache_bytes() {
  int device = 0;
  WB_CUDA_CHECK(cudaGetDevice(&device));
  int bytes = 0;
  WB_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
  return bytes > 0 ? static_cast<std::size_t>(bytes) : 0;
}

}  // namespace

L2Flusher::L2Flusher() : scratch_(2 * l2_cache_bytes()) {}

void L2Flusher::flush(cudaStream_t stream) {
  if (scratch_.empty()) return;
#if !defined(CUSIM)
  // Lines the timed code marked persisting (an access policy window) would survive the flush and
  // keep its inputs in L2 across repetitions: make them normal first. A GPU without persisting L2
  // lines refuses the call; that error must not stay as the runtime's last error.
  if (cudaCtxResetPersistingL2Cache() != cudaSuccess) (void)cudaGetLastError();
#endif
  WB_CUDA_CHECK(cudaMemsetAsync(scratch_.data(), 0x5A, scratch_.size(), stream));
}

Timing time_median(const std::function<void()>& work, const TimingOptions& options) {
  if (const detail::TimingHooks& hooks = detail::timing_hooks(); hooks.time_median) return hooks.time_median(work, options);
  if (options.repetitions < 1) throw std::invalid_argument("time_median: repetitions must be at least 1");
  std::optional<L2Flusher> flusher;
  if (options.flush_l2) flusher.emplace();
  for (int i = 0; i < options.warmup; ++i) {
    if (options.before_each) options.before_each();
    if (flusher) flusher->flush(options.stream);
    work();
  }
  WB_CUDA_CHECK(cudaStreamSynchronize(options.stream));

  EventPair events;
  std::vector<double> samples, after_stop;
  samples.reserve(static_cast<std::size_t>(options.repetitions));
  after_stop.reserve(static_cast<std::size_t>(options.repetitions));
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < options.repetitions; ++i) {
    if (options.before_each) options.before_each();
    if (flusher) flusher->flush(options.stream);
    WB_CUDA_CHECK(cudaEventRecord(events.start, options.stream));
    work();
    WB_CUDA_CHECK(cudaEventRecord(events.stop, options.stream));
    WB_CUDA_CHECK(cudaEventSynchronize(events.stop));
    // Whatever the device still runs now is work the two events did not time.
    const Clock::time_point stopped = Clock::now();
    WB_CUDA_CHECK(cudaDeviceSynchronize());
    after_stop.push_back(std::chrono::duration<double, std::milli>(Clock::now() - stopped).count());
    float ms = 0.0f;
    WB_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start, events.stop));
    samples.push_back(ms);
  }
  return detail::summarize(std::move(samples), std::move(after_stop));
}

Timing detail::summarize(std::vector<double> samples, std::vector<double> after_stop) {
  if (samples.empty()) throw std::invalid_argument("time_median: no repetitions");
  Timing timing;
  timing.repetitions = static_cast<int>(samples.size());
  timing.min_ms = *std::min_element(samples.begin(), samples.end());
  timing.max_ms = *std::max_element(samples.begin(), samples.end());
  timing.median_ms = median(std::move(samples));
  timing.after_stop_ms = median(std::move(after_stop));
  if (timing.after_stop_ms > 0.03 + 0.25 * timing.median_ms) {
    throw TimingError("the timed work kept the device busy for " + std::to_string(timing.after_stop_ms) +
                      " ms (median) after its stop event, against " + std::to_string(timing.median_ms) +
                      " ms between its events: work on a stream that does not wait for the timed stream "
                      "(cudaStreamNonBlocking) or launched from another thread escaped the timing. Do all the "
                      "work on the stream the function was given, and finish it before returning.");
  }
  return timing;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return 0.5 * (lower + upper);
}

double gb_per_s(double bytes_moved, double milliseconds) {
  return milliseconds > 0.0 ? bytes_moved / (milliseconds * 1.0e6) : 0.0;
}

}  // namespace wb
