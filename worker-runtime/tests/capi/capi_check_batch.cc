// rt_capi_check's batch checks: korovod_enqueue_many / korovod_wait_all across ranks that batch
// the same operations differently (as optimizer hooks do when gradients come ready at different
// moments), so each op must still meet its peers by name, not by its place in a batch.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "capi_check.h"

namespace korovod::capi_check {

void check_enqueue_many(korovod_runtime* rt, Checker& c) {
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  constexpr int kOps = 6;
  std::vector<std::vector<float>> data(kOps);
  std::vector<std::string> names(kOps);
  for (int i = 0; i < kOps; ++i) {
    data[i].assign(static_cast<size_t>(i + 1), static_cast<float>((rank + 1) * (i + 1)));
    names[i] = fmt::format("many.{}", i);
  }
  // Rank 0 hands all six over at once in order; the others in batches of 1, 2 and 3, last first.
  std::vector<std::vector<int>> batches = {{0, 1, 2, 3, 4, 5}};
  if (rank != 0) batches = {{5}, {4, 3}, {2, 1, 0}};
  std::vector<int64_t> handles;
  for (const auto& batch : batches) {
    const int n = static_cast<int>(batch.size());
    std::vector<const char*> ns;
    std::vector<void*> inputs;
    std::vector<int32_t> dtypes(n, KOROVOD_FLOAT32), ndims(n, 1), ops(n, KOROVOD_SUM);
    std::vector<double> pre(n, 1.0), post(n, 2.0);
    std::vector<std::vector<int64_t>> shape_store;
    std::vector<const int64_t*> shapes;
    shape_store.reserve(n);
    for (int i : batch) {
      ns.push_back(names[i].c_str());
      inputs.push_back(data[i].data());
      shape_store.push_back({static_cast<int64_t>(data[i].size())});
      shapes.push_back(shape_store.back().data());
    }
    std::vector<int64_t> hs(n, 0);
    const int queued = korovod_enqueue_many(rt, KOROVOD_OP_ALLREDUCE, n, ns.data(), inputs.data(), nullptr,
                                            dtypes.data(), ndims.data(), shapes.data(), nullptr, ops.data(),
                                            pre.data(), post.data(), 0, nullptr, hs.data());
    c.check(queued == n, "enqueue_many of {}: {} {}", n, queued, queued < 0 ? korovod_last_error(rt) : "");
    for (int64_t h : hs) {
      if (h > 0) handles.push_back(h);
    }
  }
  std::vector<int32_t> statuses(handles.size(), -9);
  const int code = korovod_wait_all(rt, handles.data(), static_cast<int>(handles.size()), 60.0, statuses.data());
  c.check(code == KOROVOD_OK, "wait_all: {} {}", code, code ? korovod_last_error(rt) : "");
  for (size_t i = 0; i < statuses.size(); ++i) c.check(statuses[i] == KOROVOD_OK, "status {}: {}", i, statuses[i]);
  korovod_release_many(rt, handles.data(), static_cast<int>(handles.size()));
  const float total = static_cast<float>(size * (size + 1) / 2);
  for (int i = 0; i < kOps; ++i) {
    const float want = 2.f * total * static_cast<float>(i + 1);
    bool ok = true;
    for (float v : data[i]) ok = ok && v == want;
    c.check(ok, "many.{}: {} (want {})", i, data[i].empty() ? 0.f : data[i][0], want);
  }
}

}  // namespace korovod::capi_check
