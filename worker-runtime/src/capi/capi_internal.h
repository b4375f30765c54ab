// What the C ABI's objects are, shared by its files (c_api.cc: lifecycle and queries,
// c_api_ops.cc: operations and handles). Every piece of state lives in an object the caller
// holds: no globals.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "capi/output_buffer.h"
#include "core/mutex.h"
#include "korovod/c_api.h"
#include "korovod/runtime.h"

struct korovod_runtime {
  // What the queries answer, also after shutdown.
  korovod::WorldInfo world;
  std::string transport_name;
  std::string backend_names;  // comma separated

  mutable korovod::Mutex mu;
  // Null after korovod_shutdown, which lets the Runtime (its sockets, a TCP store it hosts) go
  // as soon as no call is using it: every call works on its own reference (runtime_of).
  std::shared_ptr<korovod::Runtime> runtime KOROVOD_GUARDED_BY(mu);
  // Per calling thread: several threads may call at once and each reads its own failure.
  std::map<std::thread::id, std::string> last_errors KOROVOD_GUARDED_BY(mu);
  std::unordered_map<int64_t, std::string> handle_errors KOROVOD_GUARDED_BY(mu);                        // korovod_handle_error
  std::unordered_map<int64_t, std::shared_ptr<korovod::OutputSlot>> outputs KOROVOD_GUARDED_BY(mu);  // runtime-allocated
};

struct korovod_event {
  std::shared_ptr<const korovod::ReadyEvent> event;
};

namespace korovod::capi {

// One operation as the flat C arguments describe it, converted and checked.
struct PreparedOp {
  CollectiveArgs args;
  std::shared_ptr<OutputSlot> output;  // set when the runtime allocates the output
};

// korovod_enqueue's flat arguments.
struct FlatOp {
  int type;
  const char* name;
  void* input;
  void* output;
  int dtype, ndim;
  const int64_t* shape;
  int device, op;
  double prescale, postscale;
  int root_rank;
  const int32_t* splits;
  int num_splits, process_set;
};

}  // namespace korovod::capi

struct korovod_group {
  std::vector<korovod::capi::PreparedOp> ops;
  korovod::Status first_error;  // of a korovod_group_add; reported by korovod_group_enqueue
};

namespace korovod::capi {

int code_of(const Status& s);
// Records `s` as this thread's last error on `rt` and returns its code.
int fail(korovod_runtime* rt, const Status& s);
// NUL-terminated, truncated copy into a caller's buffer (nothing when buf is null or len <= 0).
void copy_text(const std::string& text, char* buf, int len);
// The runtime, or null after shutdown / for a null rt.
std::shared_ptr<Runtime> runtime_of(const korovod_runtime* rt);
Status not_running();  // what calls on a shut-down runtime fail with
// The C handle of a started runtime (korovod_init_ex's last step; tests wrap one built on a
// fake Env). korovod_destroy frees it.
korovod_runtime* wrap(std::unique_ptr<Runtime> runtime);
// Converts and checks what only the C layer can (pointers, counts, enum ranges); the runtime
// checks the rest (dtype, shapes, splits, root) and names the tensor in its errors. `ready` is
// consumed (moved into the op, or freed on error).
Result<PreparedOp> prepare(const FlatOp& f, std::unique_ptr<korovod_event> ready);
// Keeps a runtime-allocated output slot under its handle (for korovod_handle_take_dlpack).
void remember_output(korovod_runtime* rt, int64_t handle, std::shared_ptr<OutputSlot> slot);

}  // namespace korovod::capi
