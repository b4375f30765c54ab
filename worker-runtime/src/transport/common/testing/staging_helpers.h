// Shared pieces of rt_staging_test: fake-GPU tensors (fake::FakeDeviceMemory, which the host may
// touch only through copies) and typed host values.
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include "korovod/types.h"
#include "transport/fake/fake_device_copier.h"

namespace korovod::stagingtest {

// A tensor on the fake GPU; freed with the test's device memory.
class DeviceTensor {
 public:
  DeviceTensor(fake::FakeDeviceMemory& memory, size_t bytes) : memory_(memory), bytes_(bytes) {
    data_ = memory_.allocate(bytes);
  }
  ~DeviceTensor() { memory_.free(data_); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  void* data() const { return data_; }
  template <typename T>
  void set(const std::vector<T>& values) {
    memory_.upload(data_, values.data(), values.size() * sizeof(T));
  }
  void set_bytes(const std::vector<std::byte>& bytes) { memory_.upload(data_, bytes.data(), bytes.size()); }
  template <typename T>
  std::vector<T> get(size_t count) const {
    std::vector<T> out(count);
    memory_.download(out.data(), data_, count * sizeof(T));
    return out;
  }
  std::vector<std::byte> get_bytes(size_t bytes) const {
    std::vector<std::byte> out(bytes);
    memory_.download(out.data(), data_, bytes);
    return out;
  }
  TensorView view(DataType dtype, std::vector<int64_t> shape) const {
    return TensorView{data_, dtype, std::move(shape), /*device=*/0};
  }

 private:
  fake::FakeDeviceMemory& memory_;
  size_t bytes_;
  void* data_ = nullptr;
};

// `count` elements of `dtype` whose value i is `values(i)` (small non-negative integers, exact in
// every dtype; bool as value % 2).
inline std::vector<std::byte> typed(DataType dtype, int64_t count, int (*value)(int64_t, int), int rank) {
  std::vector<std::byte> out(static_cast<size_t>(count * element_size(dtype)));
  for (int64_t i = 0; i < count; ++i) {
    const int v = value(i, rank);
    std::byte* at = out.data() + i * element_size(dtype);
    auto put = [&](auto x) { std::memcpy(at, &x, sizeof x); };
    switch (dtype) {
      case DataType::kUInt8: put(static_cast<uint8_t>(v)); break;
      case DataType::kInt8: put(static_cast<int8_t>(v)); break;
      case DataType::kUInt16: put(static_cast<uint16_t>(v)); break;
      case DataType::kInt16: put(static_cast<int16_t>(v)); break;
      case DataType::kInt32: put(static_cast<int32_t>(v)); break;
      case DataType::kInt64: put(static_cast<int64_t>(v)); break;
      case DataType::kFloat32: put(static_cast<float>(v)); break;
      case DataType::kFloat64: put(static_cast<double>(v)); break;
      case DataType::kBool: put(static_cast<uint8_t>(v % 2)); break;
      // Small integers: the upper half of their float32 bits is their float16/bfloat16 encoding
      // for bfloat16; float16 needs its own (exponent bias 15).
      case DataType::kBFloat16: {
        const float f = static_cast<float>(v);
        uint32_t bits = 0;
        std::memcpy(&bits, &f, sizeof bits);
        put(static_cast<uint16_t>(bits >> 16));
        break;
      }
      case DataType::kFloat16: {
        uint16_t h = 0;
        if (v != 0) {
          int e = 0;
          while ((2 << e) <= v) ++e;  // v in [2^e, 2^(e+1))
          h = static_cast<uint16_t>(((e + 15) << 10) | (((v - (1 << e)) << 10) >> e));
        }
        put(h);
        break;
      }
    }
  }
  return out;
}

constexpr DataType kAllTypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kUInt16, DataType::kInt16,
                                  DataType::kInt32,   DataType::kInt64,   DataType::kFloat16, DataType::kFloat32,
                                  DataType::kFloat64, DataType::kBool,    DataType::kBFloat16};

}  // namespace korovod::stagingtest
