// Value types shared by the C++ API, the engine and the backends. Enum values follow Horovod's
// wire numbering (message.h) so logs and tools line up; bfloat16 is korovod's addition.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace korovod {

enum class DataType : int32_t {
  kUInt8 = 0, kInt8 = 1, kUInt16 = 2, kInt16 = 3, kInt32 = 4, kInt64 = 5,
  kFloat16 = 6, kFloat32 = 7, kFloat64 = 8, kBool = 9, kBFloat16 = 10,
};
inline constexpr int kNumDataTypes = 11;

enum class ReduceOp : int32_t { kAverage = 0, kSum = 1, kAdasum = 2, kMin = 3, kMax = 4, kProduct = 5 };

enum class RequestType : int32_t {
  kAllreduce = 0, kAllgather = 1, kBroadcast = 2, kJoin = 3, kAdasum = 4,
  kAlltoall = 5, kBarrier = 6, kReducescatter = 7,
};

enum class ResponseType : int32_t {
  kAllreduce = 0, kAllgather = 1, kBroadcast = 2, kJoin = 3, kAdasum = 4,
  kAlltoall = 5, kBarrier = 6, kReducescatter = 7, kError = 8,
};

inline constexpr int kCpuDevice = -1;

// A framework tensor as the core sees it: borrowed memory, never owned.
struct TensorView {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  int device = kCpuDevice;

  int64_t numel() const;
  int64_t byte_size() const;
};

// Inline: the kernels, which sit below core (where the other functions here are defined), size
// their copies with it.
constexpr int element_size(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: case DataType::kInt8: case DataType::kBool: return 1;
    case DataType::kUInt16: case DataType::kInt16: case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt32: case DataType::kFloat32: return 4;
    case DataType::kInt64: case DataType::kFloat64: return 8;
  }
  return 1;
}
std::string_view dtype_name(DataType dtype);          // "float32", "bfloat16", ...
std::string_view reduce_op_name(ReduceOp op);         // "SUM", "AVERAGE", ...
std::string_view request_type_name(RequestType type); // "ALLREDUCE", ...
std::string_view response_type_name(ResponseType type);
bool is_valid_dtype(int32_t value);
bool is_floating(DataType dtype);

}  // namespace korovod
