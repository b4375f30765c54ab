// The in-memory data plane: every collective is an exchange of whole buffers plus local work,
// reduced in rank order with the same kernels the real backends use.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/kernels.h"
#include "transport/fake/fake_world.h"

namespace korovod::fake {
namespace {

class FakeBackend final : public Backend {
 public:
  FakeBackend(std::shared_ptr<FakeWorld> world, std::vector<int> ranks, int rank, std::string key)
      : world_(std::move(world)), ranks_(std::move(ranks)),
        index_(static_cast<int>(std::find(ranks_.begin(), ranks_.end(), rank) - ranks_.begin())),
        key_(std::move(key)) {}

  std::string name() const override { return "FAKE"; }
  bool enabled(int device) const override { return device == kCpuDevice; }
  int rank() const override { return index_; }
  int size() const override { return static_cast<int>(ranks_.size()); }

  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) override {
    const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
    auto all = exchange(std::string(static_cast<const char*>(send), bytes));
    if (!all.is_ok()) return all.status();
    std::string acc = (*all)[0];
    for (size_t r = 1; r < all->size(); ++r) kernels::reduce_into(dtype, op, acc.data(), (*all)[r].data(), count);
    if (bytes) std::memcpy(recv, acc.data(), bytes);
    return Status::ok();
  }

  Status allgatherv(const void* send, int64_t send_bytes, void* recv,
                    const std::vector<int64_t>& recv_bytes) override {
    auto all = exchange(std::string(static_cast<const char*>(send), send_bytes));
    if (!all.is_ok()) return all.status();
    char* out = static_cast<char*>(recv);
    for (size_t r = 0; r < all->size(); ++r) {
      if ((int64_t)(*all)[r].size() != recv_bytes[r]) return Status::unknown("fake allgatherv: size mismatch");
      std::memcpy(out, (*all)[r].data(), recv_bytes[r]);
      out += recv_bytes[r];
    }
    return Status::ok();
  }

  Status broadcast(void* buffer, int64_t bytes, int root) override {
    auto all = exchange(index_ == root ? std::string(static_cast<const char*>(buffer), bytes) : std::string());
    if (!all.is_ok()) return all.status();
    if (index_ != root && bytes) std::memcpy(buffer, (*all)[root].data(), bytes);
    return Status::ok();
  }

  Status alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                   const std::vector<int64_t>& recv_bytes) override {
    // Each rank publishes its whole send buffer; receiver r takes segment r from every sender.
    std::string blob(reinterpret_cast<const char*>(send_bytes.data()), send_bytes.size() * 8);
    blob.append(static_cast<const char*>(send), std::accumulate(send_bytes.begin(), send_bytes.end(), int64_t{0}));
    auto all = exchange(std::move(blob));
    if (!all.is_ok()) return all.status();
    char* out = static_cast<char*>(recv);
    for (size_t s = 0; s < all->size(); ++s) {
      const auto* counts = reinterpret_cast<const int64_t*>((*all)[s].data());
      int64_t offset = size() * 8 + std::accumulate(counts, counts + index_, int64_t{0});
      if (counts[index_] != recv_bytes[s]) return Status::unknown("fake alltoallv: size mismatch");
      std::memcpy(out, (*all)[s].data() + offset, counts[index_]);
      out += counts[index_];
    }
    return Status::ok();
  }

  Status reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts,
                       DataType dtype, ReduceOp op) override {
    int64_t total = std::accumulate(recv_counts.begin(), recv_counts.end(), int64_t{0});
    std::string reduced(static_cast<size_t>(total) * element_size(dtype), '\0');
    KOROVOD_RETURN_IF_ERROR(allreduce(send, reduced.data(), total, dtype, op));
    int64_t offset = std::accumulate(recv_counts.begin(), recv_counts.begin() + index_, int64_t{0});
    std::memcpy(recv, reduced.data() + offset * element_size(dtype), recv_counts[index_] * element_size(dtype));
    return Status::ok();
  }

  Status barrier() override { return exchange("").status(); }

 private:
  Result<std::vector<std::string>> exchange(std::string bytes) {
    return world_->exchange(key_, size(), index_, ranks_[index_], std::move(bytes));
  }
  std::shared_ptr<FakeWorld> world_;
  std::vector<int> ranks_;
  int index_;
  std::string key_;
};

}  // namespace

Result<std::unique_ptr<Backend>> FakeBackendProvider::create_backend(const std::vector<int>& global_ranks,
                                                                     int set_id) {
  return std::unique_ptr<Backend>(
      std::make_unique<FakeBackend>(world_, global_ranks, rank_, fmt::format("data/{}", set_id)));
}

}  // namespace korovod::fake
