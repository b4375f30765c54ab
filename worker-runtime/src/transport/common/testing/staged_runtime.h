// A Runtime per rank whose device backend is host staging on a fake GPU (rt_staging_test's
// engine tests): the set's CPU backend is the fake transport's, the device one a StagingBackend
// over fake::FakeDeviceMemory, so every algorithm's device path runs on a machine without a GPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/executor.h"
#include "korovod/runtime.h"
#include "transport/common/staging_backend.h"
#include "transport/common/testing/staging_helpers.h"
#include "transport/fake/fake_world.h"

namespace korovod::stagingtest {

class FakeStagingProvider final : public BackendProvider {
 public:
  FakeStagingProvider(std::shared_ptr<fake::FakeDeviceMemory> memory, int rank)
      : memory_(std::move(memory)), rank_(rank) {}
  std::string name() const override { return "STAGING"; }
  Result<std::unique_ptr<Backend>> create_backend(const std::vector<int>& ranks, int) override {
    auto copier = std::make_unique<fake::FakeDeviceCopier>(memory_);
    copier_ = copier.get();
    const int set_rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin());
    return std::unique_ptr<Backend>(std::make_unique<StagingBackend>(
        std::move(copier), set_rank, static_cast<int>(ranks.size()), "ranks 0 and 1 share fake GPU 0"));
  }
  fake::FakeDeviceCopier* copier() const { return copier_; }  // the last set's

 private:
  std::shared_ptr<fake::FakeDeviceMemory> memory_;
  int rank_;
  fake::FakeDeviceCopier* copier_ = nullptr;
};

struct StagedRuntime {
  std::shared_ptr<FakeStagingProvider> staging;
  std::unique_ptr<Runtime> rt;
  std::vector<std::string> log;
};

// host_of_rank: FakeTransportProvider's host layout (empty: one host); process_sets: static sets
// (ids 1, 2, ...).
inline void start(StagedRuntime& s, const std::shared_ptr<fake::FakeWorld>& world,
                  const std::shared_ptr<fake::FakeDeviceMemory>& memory, int rank, std::vector<int> host_of_rank = {},
                  std::vector<std::vector<int>> process_sets = {}) {
  RuntimeOptions o;
  o.make_executor = make_executor;
  o.config.cycle_time_ms = 0.5;
  o.config.log_level = LogLevel::kInfo;
  o.config.collective_timeout_seconds = 20;
  o.log_sink = [&s](LogLevel, const std::string& line) { s.log.push_back(line); };
  o.transport = std::make_shared<fake::FakeTransportProvider>(world, rank, std::move(host_of_rank));
  o.process_sets = std::move(process_sets);
  s.staging = std::make_shared<FakeStagingProvider>(memory, rank);
  o.backends.push_back(s.staging);
  o.backends.push_back(std::make_shared<fake::FakeBackendProvider>(world, rank));
  Result<std::unique_ptr<Runtime>> rt = Runtime::create(std::move(o));
  ASSERT_TRUE(rt.is_ok()) << rt.status().to_string();
  s.rt = std::move(rt).value();
}

// Device memory for outputs, as a framework's allocator gives it; freed with the list.
class DeviceOutputs {
 public:
  explicit DeviceOutputs(fake::FakeDeviceMemory& memory) : memory_(memory) {}
  ~DeviceOutputs() {
    for (void* p : given_) memory_.free(p);
  }
  OutputAllocator allocator(DataType dtype) {
    return [this, dtype](const std::vector<int64_t>& shape) -> Result<void*> {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::lock_guard lock(mu_);
      given_.push_back(memory_.allocate(static_cast<size_t>(n * element_size(dtype))));
      return given_.back();
    };
  }

 private:
  fake::FakeDeviceMemory& memory_;
  std::mutex mu_;
  std::vector<void*> given_;
};

inline Status run(Runtime& rt, CollectiveArgs a) {
  Result<Handle> h = rt.enqueue(std::move(a));
  return h.is_ok() ? rt.wait(*h) : h.status();
}

template <typename T>
std::vector<T> device_values(fake::FakeDeviceMemory& memory, const void* p, size_t count) {
  EXPECT_TRUE(memory.contains(p)) << "the output is not on the (fake) device";
  std::vector<T> out(count);
  memory.download(out.data(), p, count * sizeof(T));
  return out;
}

}  // namespace korovod::stagingtest
