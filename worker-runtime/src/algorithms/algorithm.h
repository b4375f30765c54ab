// One collective per file, each written against the Backend interface only, so a new data
// plane (tcp/, nccl/) gets every collective without touching these files or the engine.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "algorithms/op_entry.h"
#include "core/fusion.h"
#include "core/handle_table.h"
#include "core/message.h"
#include "core/timeline.h"
#include "korovod/transport.h"

namespace korovod {

struct OpContext {
  Backend& backend;
  FusionBufferManager& fusion;
  Timeline& timeline;
  HandleTable& handles;
  const Response& response;
  std::vector<OpEntry>& entries;
  Backend* host = nullptr;  // the set's host data plane (its CPU tensors' backend); may be `backend`
  SetLayout layout = {};
};

Status run_allreduce(OpContext& ctx);
Status run_allgather(OpContext& ctx);
Status run_broadcast(OpContext& ctx);
Status run_alltoall(OpContext& ctx);
Status run_reducescatter(OpContext& ctx);
// Allreduce with op Adasum (adasum.cc); run_allreduce hands it those responses. Device tensors
// travel to host memory and back through ctx.backend's copies and are reduced on ctx.host.
Status run_adasum(OpContext& ctx);

// Rows of dim0 each set rank receives from reducescatter (Horovod: ranks below dim0 % size get
// one extra row).
std::vector<int64_t> reducescatter_rows(int64_t dim0, int size);

// Helpers shared by the algorithms (algorithm_util.cc).
Result<void*> allocate_output(OpContext& ctx, OpEntry& entry, std::vector<int64_t> shape);
int64_t row_elements(const std::vector<int64_t>& shape);  // product of dims 1..n
// The response device's fusion buffer with at least `bytes`; when it has to be (re)allocated,
// `only` (or every entry of the response) gets an INIT_FUSION_BUFFER timeline activity around it.
std::byte* fusion_buffer(OpContext& ctx, int64_t bytes, const OpEntry* only = nullptr);
// The same for the host's fusion buffer, whatever the response's device.
std::byte* host_fusion_buffer(OpContext& ctx, int64_t bytes);
std::string backend_activity(const Backend& backend, RequestType type);  // "MPI_ALLREDUCE"
// Timeline activity spanning every tensor of the response.
class ScopedActivity {
 public:
  // Nothing is built or locked unless the timeline is recording.
  ScopedActivity(OpContext& ctx, std::string_view activity);
  ScopedActivity(OpContext& ctx, RequestType backend_op);  // backend_activity(ctx.backend, op)
  ~ScopedActivity();
  ScopedActivity(const ScopedActivity&) = delete;
  ScopedActivity& operator=(const ScopedActivity&) = delete;

 private:
  OpContext& ctx_;
  bool recorded_ = false;
};

}  // namespace korovod
