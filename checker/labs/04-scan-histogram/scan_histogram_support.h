/// @file
/// @brief What lab 04's scan checks (check_scan.cpp) and histogram checks (check_histogram.cpp)
/// share: the bytes outputs start as, and the scans' buffers, versions and correctness checks, which
/// check_histogram.cpp's host-code, analysis and NoIdleBlocks checks run too.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scan_histogram.h"
#include "wb/wb.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_compare_elements.h"

namespace lab04 {

using wb::check::after_call;
using wb::check::as_written;
using wb::check::cuda_success;
using wb::check::fixed;
using wb::check::Input;
using wb::check::Output;

constexpr unsigned char kUnwrittenByte = 0xCD;
constexpr std::uint32_t kUnwrittenWord = 0xCDCDCDCDu;

// ---- the scans (check_scan.cpp) ------------------------------------------------------------

// Guarded device buffers of a scan (wb_buffers.h): the input, the output and the workspace (none, and
// a null workspace.data(), for the block scans). Output and workspace start as 0xCD bytes (the
// workspace's contents are undefined on entry).
template <class T>
struct ScanBuffers {
  Input<T> in;
  Output<T> out;
  wb::DeviceBuffer<unsigned char> workspace;
  ScanBuffers(std::vector<T> input, bool with_workspace)
      : in(std::move(input), "d_in"), out(in.host.size(), "d_out", kUnwrittenByte) {
    if (with_workspace) {
      workspace = wb::DeviceBuffer<unsigned char>(scan_workspace_bytes(static_cast<int>(in.host.size())), 4096);
      workspace.fill_bytes(kUnwrittenByte);
    }
  }
  testing::AssertionResult workspace_in_bounds(const std::string& call) const {
    if (const wb::GuardDamage d = workspace.check_guards(); !d.intact()) {
      return testing::AssertionFailure()
             << call << " wrote outside d_workspace[0.." << workspace.size() << ") (byte " << d.first_index << " to "
             << d.last_index << "): the workspace holds scan_workspace_bytes(n) bytes, enough for tiles of at least "
             << "32 elements.";
    }
    return testing::AssertionSuccess();
  }
};

enum class ScanKind { kKoggeStone, kBlelloch, kReduceThenScan, kInclusive, kExclusive };

struct ScanVersion {
  const char* name;
  ScanKind kind;
  bool inclusive;
  bool workspace;
};

const ScanVersion kKoggeStone{"scan_block_kogge_stone", ScanKind::kKoggeStone, true, false};
const ScanVersion kBlelloch{"scan_block_blelloch", ScanKind::kBlelloch, false, false};
const ScanVersion kReduceThenScan{"scan_reduce_then_scan", ScanKind::kReduceThenScan, true, true};
const ScanVersion kInclusive{"inclusive_scan", ScanKind::kInclusive, true, true};
const ScanVersion kExclusive{"exclusive_scan", ScanKind::kExclusive, false, true};

// Defined in check_scan.cpp: the scans' int inputs, a call of version @p v, and the correctness
// check of an int scan and of the float inclusive_scan on n elements.
std::vector<int> scan_ints(std::size_t n, std::uint64_t seed);
cudaError_t call_scan(const ScanVersion& v, const int* in, int* out, int n, void* ws);
testing::AssertionResult check_int_scan(const ScanVersion& v, std::size_t n, std::uint64_t seed);
testing::AssertionResult check_float_scan(std::size_t n, std::uint64_t seed);

}  // namespace lab04
