#include "comm/types.h"

#include "comm/error.h"

namespace comm {

std::size_t size_of(DataType t) {
  switch (t) {
    case DataType::f32: return 4;
    case DataType::f64: return 8;
    case DataType::i32: return 4;
  }
  return 0;
}

const char* name_of(DataType t) {
  switch (t) {
    case DataType::f32: return "float";
    case DataType::f64: return "double";
    case DataType::i32: return "int32";
  }
  return "?";
}

const char* name_of(RedOp op) {
  switch (op) {
    case RedOp::sum: return "sum";
    case RedOp::prod: return "prod";
    case RedOp::min: return "min";
    case RedOp::max: return "max";
  }
  return "?";
}

DataType parse_data_type(const std::string& s) {
  if (s == "float" || s == "f32") return DataType::f32;
  if (s == "double" || s == "f64") return DataType::f64;
  if (s == "int32" || s == "i32" || s == "int") return DataType::i32;
  COMM_THROW("unknown data type '" + s + "' (expected float, double or int32)");
}

RedOp parse_red_op(const std::string& s) {
  if (s == "sum") return RedOp::sum;
  if (s == "prod") return RedOp::prod;
  if (s == "min") return RedOp::min;
  if (s == "max") return RedOp::max;
  COMM_THROW("unknown reduction operator '" + s + "' (expected sum, prod, min or max)");
}

}  // namespace comm
