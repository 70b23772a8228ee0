#include "comm/verify.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "comm/error.h"
#include "comm/reduce.h"

namespace comm {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t hash(std::uint64_t seed, int rank, std::size_t index) {
  return mix(mix(seed * 0x100000001b3ull + static_cast<std::uint64_t>(rank)) ^ index);
}

int ceil_log2(int n) {
  int b = 0;
  while ((1ll << b) < n) ++b;
  return b;
}

// A signed integer with `bits` significant bits (range [-2^(bits-1), 2^(bits-1))).
std::int64_t signed_bits(std::uint64_t h, int bits) {
  if (bits < 2) bits = 2;
  return static_cast<std::int64_t>(h & ((1ull << bits) - 1)) - (1ll << (bits - 1));
}

template <class T> constexpr int mantissa_bits() { return std::numeric_limits<T>::digits; }

}  // namespace

DataMode parse_data_mode(const std::string& s) {
  if (s == "verifiable") return DataMode::verifiable;
  if (s == "random") return DataMode::random;
  COMM_THROW("unknown data mode '" + s + "' (expected verifiable or random)");
}

const char* name_of(DataMode m) { return m == DataMode::random ? "random" : "verifiable"; }

template <class T>
T input_value(DataMode mode, RedOp op, int nranks, int rank, std::size_t index, std::uint64_t seed) {
  const std::uint64_t h = hash(seed, rank, index);
  constexpr bool is_int = std::numeric_limits<T>::is_integer;
  if (mode == DataMode::random) {
    if (is_int) return static_cast<T>(signed_bits(h, 11));
    if (op == RedOp::prod) return static_cast<T>(0.5 + static_cast<double>(h >> 11) * 0x1.0p-53);  // [0.5, 1.5)
    return static_cast<T>(static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0);                        // [-1, 1)
  }
  switch (op) {
    case RedOp::sum: {
      // Leave ceil(log2 n) + 1 bits of headroom so every partial sum of up to n terms is exact.
      int bits = (is_int ? 31 : mantissa_bits<T>()) - ceil_log2(nranks) - 1;
      if (bits > 24) bits = 24;  // keep values readable in messages
      if (is_int) return static_cast<T>(signed_bits(h, bits));
      return static_cast<T>(std::ldexp(static_cast<double>(signed_bits(h, bits)), -6));
    }
    case RedOp::prod: {
      // +-1 and +-2 (and 0.5 for floats): products of n such values stay exact.
      const unsigned pick = static_cast<unsigned>(h % (is_int ? 3 : 4));
      const bool neg = (h >> 8) & 1;
      T v = pick == 0 ? T(1) : pick == 1 ? T(2) : pick == 2 ? T(1) : static_cast<T>(0.5);
      if (is_int && nranks > 30) v = T(1);
      return neg ? static_cast<T>(-v) : v;
    }
    case RedOp::min:
    case RedOp::max:
      if (is_int) return static_cast<T>(signed_bits(h, 31));
      return static_cast<T>(std::ldexp(static_cast<double>(signed_bits(h, 20)), -6));
  }
  return T(0);
}

template float input_value<float>(DataMode, RedOp, int, int, std::size_t, std::uint64_t);
template double input_value<double>(DataMode, RedOp, int, int, std::size_t, std::uint64_t);
template std::int32_t input_value<std::int32_t>(DataMode, RedOp, int, int, std::size_t, std::uint64_t);

void fill_input(void* out, std::size_t count, DataType type, DataMode mode, RedOp op, int nranks, int rank,
                std::uint64_t seed) {
  dispatch(type, [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(out);
    for (std::size_t i = 0; i < count; ++i) p[i] = input_value<T>(mode, op, nranks, rank, i, seed);
  });
}

void expected_allreduce(void* out, std::vector<double>* tolerance, std::size_t count, DataType type, DataMode mode,
                        RedOp op, int nranks, std::uint64_t seed, std::size_t first) {
  if (tolerance) tolerance->clear();
  dispatch(type, [&](auto zero) {
    using T = decltype(zero);
    T* p = static_cast<T*>(out);
    const bool bound = mode == DataMode::random && !std::numeric_limits<T>::is_integer &&
                       (op == RedOp::sum || op == RedOp::prod) && tolerance;
    if (bound) tolerance->assign(count, 0.0);
    const long double u = std::numeric_limits<T>::epsilon() / 2.0L;
    const long double k = nranks > 1 ? nranks - 1 : 0;
    const long double gamma = k * u / (1 - k * u);
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t i = first + j;
      T acc = input_value<T>(mode, op, nranks, 0, i, seed);
      if (!bound) {
        for (int r = 1; r < nranks; ++r) acc = apply(op, acc, input_value<T>(mode, op, nranks, r, i, seed));
        p[j] = acc;
        continue;
      }
      long double exact = acc, magnitude = std::fabs(static_cast<long double>(acc));
      for (int r = 1; r < nranks; ++r) {
        long double x = input_value<T>(mode, op, nranks, r, i, seed);
        exact = op == RedOp::sum ? exact + x : exact * x;
        magnitude = op == RedOp::sum ? magnitude + std::fabs(x) : magnitude * std::fabs(x);
      }
      p[j] = static_cast<T>(exact);
      // gamma bounds the accumulated relative error; one more u for rounding `exact` itself.
      (*tolerance)[j] = static_cast<double>((gamma + u) * magnitude);
    }
  });
}

std::size_t count_wrong(const void* got, const void* expected, const std::vector<double>* tolerance,
                        std::size_t count, DataType type, Mismatch* first) {
  const bool tol = tolerance && tolerance->size() == count;
  return dispatch(type, [&](auto zero) -> std::size_t {
    using T = decltype(zero);
    const T* g = static_cast<const T*>(got);
    const T* e = static_cast<const T*>(expected);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      bool ok;
      if (tol)
        ok = std::fabs(static_cast<double>(g[i]) - static_cast<double>(e[i])) <= (*tolerance)[i];
      else
        ok = std::memcmp(&g[i], &e[i], sizeof(T)) == 0;
      if (!ok) {
        if (wrong == 0 && first) {
          first->index = i;
          first->expected = static_cast<double>(e[i]);
          first->got = static_cast<double>(g[i]);
          first->tolerance = tol ? (*tolerance)[i] : 0.0;
        }
        ++wrong;
      }
    }
    return wrong;
  });
}

}  // namespace comm
