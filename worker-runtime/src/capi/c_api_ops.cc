// The C ABI, part 2: operations (korovod_enqueue, groups, the per-op entry points), ready events
// and handles, outputs included.
#include <fmt/format.h>

#include <functional>

#include "capi/capi_internal.h"
#include "korovod/cuda.h"

namespace korovod::capi {
namespace {

bool runtime_allocates_output(RequestType t) {
  return t == RequestType::kAllgather || t == RequestType::kAlltoall || t == RequestType::kReducescatter;
}

bool known_type(int type) {
  switch (static_cast<RequestType>(type)) {
    case RequestType::kAllreduce: case RequestType::kAllgather: case RequestType::kBroadcast:
    case RequestType::kJoin: case RequestType::kAdasum: case RequestType::kAlltoall:
    case RequestType::kBarrier: case RequestType::kReducescatter:
      return true;
  }
  return false;
}

}  // namespace

Result<PreparedOp> prepare(const FlatOp& f, std::unique_ptr<korovod_event> ready) {
  const std::string name = f.name ? f.name : "";
  if (!known_type(f.type)) return Status::invalid_argument(fmt::format("tensor '{}': unknown operation type {}", name, f.type));
  if (f.ndim < 0 || (f.ndim > 0 && !f.shape)) {
    return Status::invalid_argument(fmt::format("tensor '{}': ndim {} with shape {}", name, f.ndim, f.shape ? "set" : "NULL"));
  }
  if (f.op < 0 || f.op > static_cast<int>(ReduceOp::kProduct)) {
    return Status::invalid_argument(fmt::format("tensor '{}': unknown reduce op {}", name, f.op));
  }
  if (f.num_splits < 0 || (f.num_splits > 0 && !f.splits)) {
    return Status::invalid_argument(fmt::format("tensor '{}': num_splits {} with splits {}", name, f.num_splits,
                                                f.splits ? "set" : "NULL"));
  }
  PreparedOp p;
  CollectiveArgs& a = p.args;
  a.type = static_cast<RequestType>(f.type);
  a.name = name;
  a.input.data = f.input;
  a.input.dtype = static_cast<DataType>(f.dtype);
  a.input.shape.assign(f.shape, f.shape + f.ndim);
  a.input.device = f.device;
  a.op = static_cast<ReduceOp>(f.op);
  a.prescale = f.prescale;
  a.postscale = f.postscale;
  a.root_rank = f.root_rank;
  if (f.splits) a.splits.assign(f.splits, f.splits + f.num_splits);
  a.process_set = f.process_set;
  if (ready) a.ready_event = std::move(ready->event);
  if (runtime_allocates_output(a.type)) {
    if (f.output) {
      return Status::invalid_argument(fmt::format("tensor '{}': {} allocates its output; pass output NULL", name,
                                                  request_type_name(a.type)));
    }
    if (!is_valid_dtype(f.dtype)) return Status::invalid_argument(fmt::format("tensor '{}': invalid dtype {}", name, f.dtype));
    p.output = std::make_shared<OutputSlot>(a.input.dtype, a.input.device);
    a.allocator = allocator_for(p.output);
    a.on_done = done_callback_for(p.output);
  } else if (a.type == RequestType::kAllreduce || a.type == RequestType::kBroadcast || a.type == RequestType::kAdasum) {
    a.output = a.input;
    if (f.output) a.output.data = f.output;  // NULL: in place
  }
  return p;
}

namespace {

FlatOp flat(int type, const char* name, const korovod_tensor* t) {
  FlatOp f{};
  f.type = type;
  f.name = name;
  f.prescale = f.postscale = 1.0;
  f.op = static_cast<int>(ReduceOp::kAverage);
  if (t) {
    f.input = t->data;
    f.dtype = t->dtype;
    f.ndim = t->ndim;
    f.shape = t->shape;
    f.device = t->device;
  } else {
    f.device = kCpuDevice;
  }
  return f;
}

}  // namespace

void remember_output(korovod_runtime* rt, int64_t handle, std::shared_ptr<OutputSlot> slot) {
  if (!slot) return;
  MutexLock lock(rt->mu);
  rt->outputs[handle] = std::move(slot);
}

namespace {

// Prepares and queues one op of a (non-null) rt. `complete`, when given, finishes the prepared
// op first (korovod_enqueue_async's callbacks). The runtime it was queued on is left in `used`.
Result<Handle> queue_one(korovod_runtime* rt, const FlatOp& f, std::unique_ptr<korovod_event> event,
                         const std::function<Status(PreparedOp&)>& complete, std::shared_ptr<Runtime>& used) {
  used = runtime_of(rt);
  if (!used) return not_running();
  Result<PreparedOp> p = prepare(f, std::move(event));
  if (!p.is_ok()) return p.status();
  if (complete) KOROVOD_RETURN_IF_ERROR(complete(*p));
  Result<Handle> h = used->enqueue(std::move(p->args));
  if (h.is_ok()) remember_output(rt, *h, std::move(p->output));
  return h;
}

int64_t enqueue_one(korovod_runtime* rt, const FlatOp& f, korovod_event* ready) {
  std::unique_ptr<korovod_event> event(ready);  // consumed, also on error
  if (!rt) return KOROVOD_ERR_NOT_INITIALIZED;
  std::shared_ptr<Runtime> runtime;
  Result<Handle> h = queue_one(rt, f, std::move(event), nullptr, runtime);
  return h.is_ok() ? *h : fail(rt, h.status());
}

// What makes a prepared op korovod_enqueue_async's: the caller's allocator for a runtime-sized
// output (instead of a slot kept under the handle) and its done callback.
Status complete_async(PreparedOp& p, korovod_alloc_fn alloc, korovod_done_fn done, void* arg) {
  CollectiveArgs& a = p.args;
  if (p.output && !alloc) {
    return Status::invalid_argument(fmt::format("tensor '{}': {} needs alloc (the runtime learns the output's size)",
                                                a.name, request_type_name(a.type)));
  }
  if (!p.output && alloc) {
    return Status::invalid_argument(
        fmt::format("tensor '{}': {} writes to output; pass alloc NULL", a.name, request_type_name(a.type)));
  }
  p.output.reset();  // nothing kept under the handle: the caller's alloc holds the output
  if (alloc) {
    a.allocator = [alloc, arg, tensor = a.name](const std::vector<int64_t>& dims) -> Result<void*> {
      void* data = nullptr;
      if (alloc(arg, static_cast<int>(dims.size()), dims.data(), &data) != 0) {
        return Status::aborted(fmt::format("tensor '{}': the framework could not allocate the output", tensor));
      }
      return data;
    };
  }
  a.on_done = [done, arg](const Status& status, const OpOutput& out) {
    const std::string text = status.is_ok() ? std::string() : status.message();
    const korovod_op_result result{code_of(status), text.c_str(), out.received_splits.data(),
                                   static_cast<int32_t>(out.received_splits.size()), out.last_joined_rank};
    done(arg, &result);
  };
  return Status::ok();
}

// The output slot of a handle, or why there is none.
Result<std::shared_ptr<OutputSlot>> slot_of(korovod_runtime* rt, int64_t handle) {
  MutexLock lock(rt->mu);
  auto it = rt->outputs.find(handle);
  if (it == rt->outputs.end()) {
    return Status::invalid_argument(fmt::format("handle {} has no output the runtime allocated", handle));
  }
  return it->second;
}

}  // namespace
}  // namespace korovod::capi

using namespace korovod::capi;
using korovod::RequestType;
using korovod::Status;

extern "C" {

int64_t korovod_enqueue(korovod_runtime* rt, int type, const char* name, void* input, void* output, int dtype,
                        int ndim, const int64_t* shape, int device, int op, double prescale, double postscale,
                        int root_rank, const int32_t* splits, int num_splits, int process_set,
                        korovod_event* ready) {
  const FlatOp f{type,   name,   input,    output,    dtype,     ndim,   shape,      device,
                 op,     prescale, postscale, root_rank, splits, num_splits, process_set};
  return enqueue_one(rt, f, ready);
}

int korovod_enqueue_async(korovod_runtime* rt, int type, const char* name, void* input, void* output, int dtype,
                          int ndim, const int64_t* shape, int device, int op, double prescale, double postscale,
                          int root_rank, const int32_t* splits, int num_splits, int process_set,
                          korovod_event* ready, korovod_alloc_fn alloc, korovod_done_fn done, void* arg) {
  std::unique_ptr<korovod_event> event(ready);  // consumed, also on error
  if (!rt) return KOROVOD_ERR_NOT_INITIALIZED;
  if (!done) return fail(rt, Status::invalid_argument("korovod_enqueue_async: done is NULL"));
  const FlatOp f{type,   name,   input,    output,    dtype,     ndim,   shape,      device,
                 op,     prescale, postscale, root_rank, splits, num_splits, process_set};
  std::shared_ptr<korovod::Runtime> runtime;
  korovod::Result<korovod::Handle> h = queue_one(
      rt, f, std::move(event), [&](PreparedOp& p) { return complete_async(p, alloc, done, arg); }, runtime);
  if (!h.is_ok()) return fail(rt, h.status());
  // No caller waits for it: a zero wait fails it if the engine stopped, a poll starts it now.
  (void)runtime->wait_for(*h, 0.0);
  (void)runtime->poll(*h);
  runtime->detach(*h);
  return KOROVOD_OK;
}

korovod_group* korovod_group_new(void) { return new korovod_group(); }

int korovod_group_add(korovod_group* group, int type, const char* name, void* input, void* output, int dtype,
                      int ndim, const int64_t* shape, int device, int op, double prescale, double postscale,
                      int root_rank, const int32_t* splits, int num_splits, int process_set,
                      korovod_event* ready) {
  std::unique_ptr<korovod_event> event(ready);
  if (!group) return KOROVOD_ERR_INVALID_ARGUMENT;
  const FlatOp f{type,   name,   input,    output,    dtype,     ndim,   shape,      device,
                 op,     prescale, postscale, root_rank, splits, num_splits, process_set};
  korovod::Result<PreparedOp> p = prepare(f, std::move(event));
  if (!p.is_ok()) {
    if (group->first_error.is_ok()) group->first_error = p.status();
    return code_of(p.status());
  }
  group->ops.push_back(std::move(p).value());
  return KOROVOD_OK;
}

int korovod_group_enqueue(korovod_runtime* rt, korovod_group* group, int64_t* handles_out, int max_handles) {
  if (!rt) return KOROVOD_ERR_NOT_INITIALIZED;
  if (!group) return fail(rt, Status::invalid_argument("korovod_group_enqueue: group is NULL"));
  // The group is emptied whatever happens: its ops (and their ready events) are spent.
  std::vector<PreparedOp> ops = std::move(group->ops);
  group->ops.clear();
  const Status first_error = std::exchange(group->first_error, Status::ok());
  if (!first_error.is_ok()) return fail(rt, first_error);
  if (ops.empty()) return KOROVOD_OK;
  if (!handles_out || max_handles < static_cast<int>(ops.size())) {
    return fail(rt, Status::invalid_argument(
                        fmt::format("korovod_group_enqueue: room for {} handles, the group has {}", max_handles, ops.size())));
  }
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  std::vector<korovod::CollectiveArgs> args;
  for (auto& op : ops) args.push_back(std::move(op.args));
  auto handles = runtime->enqueue_group(std::move(args));
  if (!handles.is_ok()) return fail(rt, handles.status());
  for (size_t i = 0; i < ops.size(); ++i) {
    handles_out[i] = (*handles)[i];
    remember_output(rt, (*handles)[i], std::move(ops[i].output));
  }
  return KOROVOD_OK;
}

void korovod_group_free(korovod_group* group) { delete group; }

korovod_event* korovod_cuda_event_record(int device, void* stream, char* error_text, int error_len) {
  auto event = korovod::record_cuda_ready_event_on_device(device, stream);
  if (!event.is_ok()) {
    copy_text(event.status().message(), error_text, error_len);
    return nullptr;
  }
  return new korovod_event{std::move(event).value()};
}

void korovod_event_free(korovod_event* event) { delete event; }

int64_t korovod_allreduce(korovod_runtime* rt, const char* name, const korovod_tensor* input,
                          const korovod_tensor* output, int op, double prescale, double postscale, int ps) {
  FlatOp f = flat(static_cast<int>(RequestType::kAllreduce), name, input);
  f.output = output ? output->data : nullptr;
  f.op = op;
  f.prescale = prescale;
  f.postscale = postscale;
  f.process_set = ps;
  return enqueue_one(rt, f, nullptr);
}

int64_t korovod_allgather(korovod_runtime* rt, const char* name, const korovod_tensor* input, int ps) {
  FlatOp f = flat(static_cast<int>(RequestType::kAllgather), name, input);
  f.process_set = ps;
  return enqueue_one(rt, f, nullptr);
}

int64_t korovod_broadcast(korovod_runtime* rt, const char* name, const korovod_tensor* tensor, int root, int ps) {
  FlatOp f = flat(static_cast<int>(RequestType::kBroadcast), name, tensor);
  f.root_rank = root;
  f.process_set = ps;
  return enqueue_one(rt, f, nullptr);
}

int64_t korovod_alltoall(korovod_runtime* rt, const char* name, const korovod_tensor* input, const int32_t* splits,
                         int num_splits, int ps) {
  FlatOp f = flat(static_cast<int>(RequestType::kAlltoall), name, input);
  f.splits = splits;
  f.num_splits = splits ? num_splits : 0;
  f.process_set = ps;
  return enqueue_one(rt, f, nullptr);
}

int64_t korovod_reducescatter(korovod_runtime* rt, const char* name, const korovod_tensor* input, int op,
                              double prescale, double postscale, int ps) {
  FlatOp f = flat(static_cast<int>(RequestType::kReducescatter), name, input);
  f.op = op;
  f.prescale = prescale;
  f.postscale = postscale;
  f.process_set = ps;
  return enqueue_one(rt, f, nullptr);
}

int64_t korovod_barrier(korovod_runtime* rt, int ps) {
  FlatOp f = flat(static_cast<int>(RequestType::kBarrier), nullptr, nullptr);
  f.process_set = ps;
  return enqueue_one(rt, f, nullptr);
}

int64_t korovod_join(korovod_runtime* rt, int device) {
  FlatOp f = flat(static_cast<int>(RequestType::kJoin), nullptr, nullptr);
  f.device = device;
  return enqueue_one(rt, f, nullptr);
}

int korovod_grouped_allreduce(korovod_runtime* rt, const char* const* names, const korovod_tensor* inputs,
                              const korovod_tensor* outputs, int n, int op, double prescale, double postscale,
                              int ps, int64_t* handles_out) {
  if (!rt) return KOROVOD_ERR_NOT_INITIALIZED;
  if (n < 0 || (n > 0 && (!inputs || !outputs))) return fail(rt, Status::invalid_argument("grouped_allreduce: bad tensors"));
  korovod_group group;
  for (int i = 0; i < n; ++i) {
    FlatOp f = flat(static_cast<int>(RequestType::kAllreduce), names ? names[i] : nullptr, &inputs[i]);
    f.output = outputs[i].data;
    f.op = op;
    f.prescale = prescale;
    f.postscale = postscale;
    f.process_set = ps;
    auto p = prepare(f, nullptr);
    if (!p.is_ok()) return fail(rt, p.status());
    group.ops.push_back(std::move(p).value());
  }
  return korovod_group_enqueue(rt, &group, handles_out, n);
}

int korovod_poll(korovod_runtime* rt, int64_t handle) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  auto done = runtime->poll(handle);
  return done.is_ok() ? (*done ? 1 : 0) : fail(rt, done.status());
}

int korovod_wait_for(korovod_runtime* rt, int64_t handle, double timeout_seconds) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  Status s = timeout_seconds < 0 ? runtime->wait(handle) : runtime->wait_for(handle, timeout_seconds);
  if (s.is_ok()) return KOROVOD_OK;
  if (s.code() == korovod::StatusCode::kInProgress) return KOROVOD_ERR_IN_PROGRESS;
  return fail(rt, s);
}

int korovod_wait(korovod_runtime* rt, int64_t handle) { return korovod_wait_for(rt, handle, -1.0); }

const char* korovod_handle_error(korovod_runtime* rt, int64_t handle) {
  auto runtime = runtime_of(rt);
  if (!runtime) return rt ? "korovod is not initialised (shut down)" : "korovod is not initialised";
  Status s = runtime->wait_for(handle, 0.0);
  korovod::MutexLock lock(rt->mu);
  std::string& text = rt->handle_errors[handle];
  text = s.is_ok() || s.code() == korovod::StatusCode::kInProgress ? "" : s.message();
  return text.c_str();
}

int korovod_handle_output(korovod_runtime* rt, int64_t handle, void** data, int* ndim, int64_t* shape, int max_dims) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  if (!data || !ndim || (max_dims > 0 && !shape)) return fail(rt, Status::invalid_argument("handle_output: NULL out argument"));
  auto out = runtime->output(handle);
  if (!out.is_ok()) return fail(rt, out.status());
  if (auto slot = slot_of(rt, handle); slot.is_ok()) {
    korovod::MutexLock lock((*slot)->mu);
    if ((*slot)->taken) return fail(rt, Status::invalid_argument(fmt::format("handle {}: output was taken", handle)));
  }
  *data = out->data;
  *ndim = static_cast<int>(out->shape.size());
  for (int i = 0; i < *ndim && i < max_dims; ++i) shape[i] = out->shape[i];
  return KOROVOD_OK;
}

void* korovod_handle_take_dlpack(korovod_runtime* rt, int64_t handle, int dl_code, int dl_bits) {
  if (!rt) return nullptr;
  auto slot = slot_of(rt, handle);
  if (!slot.is_ok()) {
    (void)fail(rt, slot.status());
    return nullptr;
  }
  auto managed = korovod::take_as_dlpack(**slot, dl_code, dl_bits);
  if (!managed.is_ok()) {
    (void)fail(rt, managed.status());
    return nullptr;
  }
  return *managed;
}

void korovod_dlpack_delete(void* managed_tensor) { korovod::delete_dlpack(managed_tensor); }

int korovod_handle_received_splits(korovod_runtime* rt, int64_t handle, int32_t* splits, int max_splits) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  auto out = runtime->output(handle);
  if (!out.is_ok()) return fail(rt, out.status());
  const int n = static_cast<int>(out->received_splits.size());
  for (int i = 0; splits && i < n && i < max_splits; ++i) splits[i] = out->received_splits[i];
  return n;
}

int korovod_handle_last_joined_rank(korovod_runtime* rt, int64_t handle) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  auto out = runtime->output(handle);
  return out.is_ok() ? out->last_joined_rank : fail(rt, out.status());
}

void korovod_release(korovod_runtime* rt, int64_t handle) {
  if (!rt) return;
  if (auto runtime = runtime_of(rt)) runtime->release(handle);
  std::shared_ptr<korovod::OutputSlot> slot;  // freed outside the lock
  korovod::MutexLock lock(rt->mu);
  rt->handle_errors.erase(handle);
  if (auto it = rt->outputs.find(handle); it != rt->outputs.end()) {
    slot = std::move(it->second);
    rt->outputs.erase(it);
  }
}

}  // extern "C"
