#include "korovod/types.h"

#include "korovod/status.h"

namespace korovod {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorView::byte_size() const { return numel() * element_size(dtype); }

std::string_view dtype_name(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kFloat16: return "float16";
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kBool: return "bool";
    case DataType::kBFloat16: return "bfloat16";
  }
  return "unknown";
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kAverage: return "AVERAGE";
    case ReduceOp::kSum: return "SUM";
    case ReduceOp::kAdasum: return "ADASUM";
    case ReduceOp::kMin: return "MIN";
    case ReduceOp::kMax: return "MAX";
    case ReduceOp::kProduct: return "PRODUCT";
  }
  return "UNKNOWN";
}

std::string_view request_type_name(RequestType type) {
  return response_type_name(static_cast<ResponseType>(type));
}

std::string_view response_type_name(ResponseType type) {
  switch (type) {
    case ResponseType::kAllreduce: return "ALLREDUCE";
    case ResponseType::kAllgather: return "ALLGATHER";
    case ResponseType::kBroadcast: return "BROADCAST";
    case ResponseType::kJoin: return "JOIN";
    case ResponseType::kAdasum: return "ADASUM";
    case ResponseType::kAlltoall: return "ALLTOALL";
    case ResponseType::kBarrier: return "BARRIER";
    case ResponseType::kReducescatter: return "REDUCESCATTER";
    case ResponseType::kError: return "ERROR";
  }
  return "UNKNOWN";
}

bool is_valid_dtype(int32_t value) { return value >= 0 && value < kNumDataTypes; }

bool is_floating(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kFloat32 ||
         dtype == DataType::kFloat64 || dtype == DataType::kBFloat16;
}

std::string Status::to_string() const {
  static constexpr const char* kNames[] = {"OK", "INVALID_ARGUMENT", "PRECONDITION_ERROR", "ABORTED",
                                           "UNKNOWN_ERROR", "IN_PROGRESS", "NOT_INITIALIZED"};
  return std::string(kNames[static_cast<int>(code_)]) + (message_.empty() ? "" : ": " + message_);
}

}  // namespace korovod
