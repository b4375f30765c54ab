// Test helper: a Backend that forwards every call to another one, for test doubles that change a
// few calls (a host backend posing as a device backend, one that records its calls).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "korovod/transport.h"

namespace korovod::testing {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  bool enabled(int device) const override { return inner_->enabled(device); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status allreduce(const void* s, void* r, int64_t n, DataType t, ReduceOp op) override {
    return inner_->allreduce(s, r, n, t, op);
  }
  Status allgatherv(const void* s, int64_t sb, void* r, const std::vector<int64_t>& rb) override {
    return inner_->allgatherv(s, sb, r, rb);
  }
  Status broadcast(void* b, int64_t bytes, int root) override { return inner_->broadcast(b, bytes, root); }
  Status alltoallv(const void* s, const std::vector<int64_t>& sb, void* r, const std::vector<int64_t>& rb) override {
    return inner_->alltoallv(s, sb, r, rb);
  }
  Status reducescatter(const void* s, void* r, const std::vector<int64_t>& c, DataType t, ReduceOp op) override {
    return inner_->reducescatter(s, r, c, t, op);
  }
  Status barrier() override { return inner_->barrier(); }
  Status copy(void* dst, const void* src, int64_t bytes) override { return inner_->copy(dst, src, bytes); }
  void set_chunk_bytes(int64_t bytes) override { inner_->set_chunk_bytes(bytes); }

 protected:
  Backend& inner() { return *inner_; }

 private:
  std::unique_ptr<Backend> inner_;
};

}  // namespace korovod::testing
