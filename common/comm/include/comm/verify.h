// Inputs whose all-reduce result is known exactly, and the comparison that counts wrong
// elements (nccl-tests' #wrong column).
//
// Verifiable data (the default): each element is a dyadic rational with few significant bits
// (sum), a power of two or its negative (prod), or any value (min, max), scaled to the rank
// count so that every partial result is representable. Floating-point sums are then exact in
// any association order, so a correct all-reduce is bit-identical to the reference whatever
// its algorithm.
//
// Random data: uniform in [-1, 1); the reference is computed in long double and an element
// is wrong when it differs by more than the classic bound for n-1 additions,
// gamma(n-1) * sum_r |x_r|, with gamma(k) = k u / (1 - k u), u = machine epsilon / 2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/types.h"

namespace comm {

enum class DataMode { verifiable, random };

DataMode parse_data_mode(const std::string& s);
const char* name_of(DataMode m);

/// The value rank `rank` of `nranks` contributes at element `index`.
template <class T>
T input_value(DataMode mode, RedOp op, int nranks, int rank, std::size_t index, std::uint64_t seed);

/// Fills host buffer `out` (count elements of `type`) with rank `rank`'s input.
void fill_input(void* out, std::size_t count, DataType type, DataMode mode, RedOp op, int nranks, int rank,
                std::uint64_t seed);

/// The expected all-reduce result (host, count elements of `type`), reduced in rank order,
/// and for random float data the per-element tolerance (else `tolerance` is left empty).
/// With `first` > 0 it computes elements [first, first + count) of the result into out[0..count).
void expected_allreduce(void* out, std::vector<double>* tolerance, std::size_t count, DataType type,
                        DataMode mode, RedOp op, int nranks, std::uint64_t seed, std::size_t first = 0);

/// First wrong element of a comparison.
struct Mismatch {
  std::size_t index = 0;
  double expected = 0, got = 0, tolerance = 0;
};

/// Counts elements of `got` that differ from `expected` (bitwise for integers and for float
/// data without tolerance; NaN never matches); fills `first` with the first one.
std::size_t count_wrong(const void* got, const void* expected, const std::vector<double>* tolerance,
                        std::size_t count, DataType type, Mismatch* first = nullptr);

}  // namespace comm
