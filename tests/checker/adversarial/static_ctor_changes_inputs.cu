// Attack (static_ctor_changes_inputs): defines wb::random_floats (common/wb/include/wb/random.h)
// to return zeros, so that with a = anything, y = a*0 + 0 = 0 = the untouched y, and a static
// constructor sets GTEST_FILTER=-* (run no check), GTEST_ALSO_RUN_DISABLED_TESTS and
// GTEST_OUTPUT, hoping the check process reads them. The lab functions do nothing.
// Must happen: inputs and GoogleTest's options belong to the judge, a separate program started
// before the worker; every correctness check fails.
#include "saxpy.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace wb {
std::vector<float> random_floats(std::size_t n, std::uint64_t, float, float) { return std::vector<float>(n, 0.0f); }
}  // namespace wb

namespace {
struct ChangeOptions {
  ChangeOptions() {
    setenv("GTEST_FILTER", "-*", 1);
    setenv("GTEST_ALSO_RUN_DISABLED_TESTS", "1", 1);
    setenv("GTEST_BRIEF", "1", 1);
    setenv("GTEST_OUTPUT", "json:/dev/null", 1);
  }
} change_options;
}  // namespace

cudaError_t saxpy(int, float, const float*, float*) { return cudaSuccess; }
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) { return cudaSuccess; }
cudaError_t saxpy_host(int, float, const float*, float*) { return cudaSuccess; }
