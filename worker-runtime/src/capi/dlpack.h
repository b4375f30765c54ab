// The DLPack 0.x ABI (the "legacy" DLManagedTensor every framework's from_dlpack accepts in a
// "dltensor" capsule), declared here from the specification: https://dmlc.github.io/dlpack/latest/
// (c_api: DLDevice, DLDataType, DLTensor, DLManagedTensor; layout unchanged from v0.6 through
// v0.8). The static_asserts pin the x86-64 / aarch64 layout the frameworks were built with.
#pragma once

#include <cstddef>
#include <cstdint>

namespace korovod::dlpack {

enum DeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2 };
enum TypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };

struct Device {
  DeviceType device_type;
  int32_t device_id;
};

struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // null: compact, row-major
  uint64_t byte_offset;
};

struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

static_assert(sizeof(Device) == 8 && sizeof(DataType) == 4);
static_assert(offsetof(Tensor, device) == 8 && offsetof(Tensor, ndim) == 16 && offsetof(Tensor, dtype) == 20);
static_assert(offsetof(Tensor, shape) == 24 && offsetof(Tensor, byte_offset) == 40 && sizeof(Tensor) == 48);
static_assert(offsetof(ManagedTensor, manager_ctx) == 48 && sizeof(ManagedTensor) == 64);

}  // namespace korovod::dlpack
