// The C ABI, part 3: many operations or handles per call (korovod_enqueue_many,
// korovod_wait_all, korovod_release_many). A binding that hands over a batch of tensors -- the
// gradients an optimizer's hooks saw ready -- pays one crossing of its foreign-function layer
// for the batch instead of one per tensor; each op still negotiates and completes on its own.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "capi/capi_internal.h"

namespace korovod::capi {
namespace {

bool batchable(int type) {
  const auto t = static_cast<RequestType>(type);
  return t == RequestType::kAllreduce || t == RequestType::kAllgather || t == RequestType::kReducescatter;
}

// What only the whole call can get wrong (the per-op checks are prepare()'s).
Status check_many(int type, int count, void* const* inputs, void* const* outputs, const int32_t* dtypes,
                  const int32_t* ndims, const int64_t* const* shapes, int64_t* handles_out) {
  if (count < 0) return Status::invalid_argument(fmt::format("korovod_enqueue_many: count {} is negative", count));
  if (!batchable(type)) {
    return Status::invalid_argument(fmt::format(
        "korovod_enqueue_many: type {} is not allreduce, allgather or reducescatter (use korovod_enqueue)", type));
  }
  if (count == 0) return Status::ok();
  const char* missing = !inputs ? "inputs" : !dtypes ? "dtypes" : !ndims ? "ndims" : !shapes ? "shapes"
                        : !handles_out ? "handles_out" : nullptr;
  if (missing) return Status::invalid_argument(fmt::format("korovod_enqueue_many: {} is NULL", missing));
  if (outputs && static_cast<RequestType>(type) != RequestType::kAllreduce) {
    return Status::invalid_argument(fmt::format("korovod_enqueue_many: {} allocates its outputs; pass outputs NULL",
                                                request_type_name(static_cast<RequestType>(type))));
  }
  return Status::ok();
}

Status at_index(const Status& s, int index, int count) {
  return Status(s.code(), fmt::format("korovod_enqueue_many: op {} of {}: {}", index, count, s.message()));
}

}  // namespace
}  // namespace korovod::capi

using namespace korovod::capi;
using korovod::Status;

extern "C" {

int korovod_enqueue_many(korovod_runtime* rt, int type, int count, const char* const* names, void* const* inputs,
                         void* const* outputs, const int32_t* dtypes, const int32_t* ndims,
                         const int64_t* const* shapes, const int32_t* devices, const int32_t* ops,
                         const double* prescales, const double* postscales, int process_set,
                         korovod_event* const* ready, int64_t* handles_out) {
  // Every ready event is consumed, whatever happens below.
  std::vector<std::unique_ptr<korovod_event>> events(ready && count > 0 ? count : 0);
  for (size_t i = 0; i < events.size(); ++i) events[i].reset(ready[i]);
  if (!rt) return KOROVOD_ERR_NOT_INITIALIZED;
  if (handles_out && count > 0) std::fill(handles_out, handles_out + count, 0);
  if (Status bad = check_many(type, count, inputs, outputs, dtypes, ndims, shapes, handles_out); !bad.is_ok()) {
    return fail(rt, bad);
  }
  if (count == 0) return 0;
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  std::vector<PreparedOp> prepared;
  prepared.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const FlatOp f{type,
                   names ? names[i] : nullptr,
                   inputs[i],
                   outputs ? outputs[i] : nullptr,
                   dtypes[i],
                   ndims[i],
                   shapes[i],
                   devices ? devices[i] : korovod::kCpuDevice,
                   ops ? ops[i] : KOROVOD_AVERAGE,
                   prescales ? prescales[i] : 1.0,
                   postscales ? postscales[i] : 1.0,
                   0,
                   nullptr,
                   0,
                   process_set};
    std::unique_ptr<korovod_event> event;
    if (!events.empty()) event = std::move(events[i]);
    korovod::Result<PreparedOp> p = prepare(f, std::move(event));
    if (!p.is_ok()) return fail(rt, at_index(p.status(), i, count));
    prepared.push_back(std::move(p).value());
  }
  for (int i = 0; i < count; ++i) {
    // The runtime's refusal (a duplicate name, an unknown process set) names the tensor, as
    // korovod_enqueue's does; the ops before it stay queued (their handles are in handles_out).
    korovod::Result<korovod::Handle> h = runtime->enqueue(std::move(prepared[i].args));
    if (!h.is_ok()) return fail(rt, h.status());
    handles_out[i] = *h;
    remember_output(rt, *h, std::move(prepared[i].output));
  }
  return count;
}

int korovod_wait_all(korovod_runtime* rt, const int64_t* handles, int count, double timeout_seconds,
                     int32_t* statuses) {
  if (!rt) return KOROVOD_ERR_NOT_INITIALIZED;
  if (count < 0 || (count > 0 && !handles)) {
    return fail(rt, Status::invalid_argument(
                        fmt::format("korovod_wait_all: count {} with handles {}", count, handles ? "set" : "NULL")));
  }
  if (count == 0) return KOROVOD_OK;
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  // One bound for all of them, on the runtime's Env (a test's fake time moves it).
  const bool timed = timeout_seconds >= 0;
  korovod::Env& env = runtime->env();
  const korovod::Env::TimePoint deadline =
      timed ? env.deadline_after_seconds(timeout_seconds) : korovod::Env::TimePoint::max();
  bool late = false;
  std::optional<Status> first_error;
  for (int i = 0; i < count; ++i) {
    Status s;
    if (timed) {
      const double left = std::chrono::duration<double>(deadline - env.now()).count();
      s = runtime->wait_for(handles[i], std::max(left, 0.0));
    } else {
      s = runtime->wait(handles[i]);
    }
    const int code = code_of(s);
    if (statuses) statuses[i] = code;
    if (code == KOROVOD_ERR_IN_PROGRESS) {
      late = true;
    } else if (code != KOROVOD_OK && !first_error) {
      first_error = std::move(s);
    }
  }
  if (late) return KOROVOD_ERR_IN_PROGRESS;
  if (first_error) return fail(rt, *first_error);
  return KOROVOD_OK;
}

void korovod_release_many(korovod_runtime* rt, const int64_t* handles, int count) {
  if (!rt || !handles) return;
  for (int i = 0; i < count; ++i) korovod_release(rt, handles[i]);
}

}  // extern "C"
