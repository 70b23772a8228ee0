// Element types and reduction operators understood by the communicator, the local
// reduction helper and the harness. Labs pass them through untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace comm {

enum class DataType { f32, f64, i32 };
enum class RedOp { sum, prod, min, max };

/// Size in bytes of one element of `t`.
std::size_t size_of(DataType t);
/// "float", "double", "int32" (the names nccl-tests prints).
const char* name_of(DataType t);
/// "sum", "prod", "min", "max".
const char* name_of(RedOp op);
/// Parses the names above (also "f32", "f64", "i32", "int"); throws comm::Error otherwise.
DataType parse_data_type(const std::string& s);
RedOp parse_red_op(const std::string& s);

template <class T> struct data_type_of;
template <> struct data_type_of<float> { static constexpr DataType value = DataType::f32; };
template <> struct data_type_of<double> { static constexpr DataType value = DataType::f64; };
template <> struct data_type_of<std::int32_t> { static constexpr DataType value = DataType::i32; };

/// Calls `f(T{})` with the C++ type matching `t`; returns what `f` returns.
template <class F> decltype(auto) dispatch(DataType t, F&& f) {
  switch (t) {
    case DataType::f64: return f(double{});
    case DataType::i32: return f(std::int32_t{});
    case DataType::f32: break;
  }
  return f(float{});
}

}  // namespace comm
