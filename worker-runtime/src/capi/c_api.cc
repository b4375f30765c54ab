// The C ABI: a thin layer over korovod::Runtime. korovod_runtime owns the Runtime plus the text
// of the last failed call, so no state lives outside the object the caller holds.
#include "korovod/c_api.h"

#include <cstring>
#include <mutex>
#include <string>

#include "korovod/mpi.h"
#include "korovod/tcp.h"

struct korovod_runtime {
  std::unique_ptr<korovod::Runtime> runtime;
  mutable std::mutex mu;  // guards last_error and handle_errors
  std::string last_error;
  std::string handle_error;
};

namespace {

using korovod::Status;
using korovod::StatusCode;

int code_of(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return KOROVOD_OK;
    case StatusCode::kInvalidArgument: return KOROVOD_ERR_INVALID_ARGUMENT;
    case StatusCode::kPreconditionError: return KOROVOD_ERR_PRECONDITION;
    case StatusCode::kAborted: return KOROVOD_ERR_ABORTED;
    case StatusCode::kInProgress: return KOROVOD_ERR_IN_PROGRESS;
    case StatusCode::kNotInitialized: return KOROVOD_ERR_NOT_INITIALIZED;
    default: return KOROVOD_ERR_UNKNOWN;
  }
}

int fail(korovod_runtime* rt, const Status& s) {
  std::lock_guard lock(rt->mu);
  rt->last_error = s.message();
  return code_of(s);
}

korovod::TensorView view(const korovod_tensor* t) {
  korovod::TensorView v;
  if (!t) return v;
  v.data = t->data;
  v.dtype = static_cast<korovod::DataType>(t->dtype);
  v.shape.assign(t->shape, t->shape + t->ndim);
  v.device = t->device;
  return v;
}

std::string name_of(const char* name) { return name ? name : ""; }

int64_t handle_or_error(korovod_runtime* rt, const korovod::Result<korovod::Handle>& h) {
  if (!h.is_ok()) return fail(rt, h.status());
  return *h;
}

}  // namespace

extern "C" {

int korovod_init(korovod_runtime** out, const void* mpi_comm, const int* set_ranks, const int* set_sizes,
                 int num_sets, char* error_text, int error_len) {
  *out = nullptr;
  std::vector<std::vector<int>> sets;
  for (int i = 0, offset = 0; i < num_sets; offset += set_sizes[i], ++i) {
    sets.emplace_back(set_ranks + offset, set_ranks + offset + set_sizes[i]);
  }
  // Without a communicator and with a rendezvous store configured (a launcher that does not use
  // mpirun), start over TCP; otherwise over MPI.
  auto runtime = mpi_comm == nullptr && korovod::tcp_rendezvous_configured(korovod::process_environment())
                     ? korovod::init_tcp_runtime(std::move(sets))
                     : korovod::init_mpi_runtime(std::move(sets), mpi_comm);
  if (!runtime.is_ok()) {
    if (error_text && error_len > 0) {
      std::strncpy(error_text, runtime.status().message().c_str(), error_len - 1);
      error_text[error_len - 1] = '\0';
    }
    return code_of(runtime.status());
  }
  *out = new korovod_runtime{std::move(runtime).value(), {}, {}, {}};
  return KOROVOD_OK;
}

int korovod_shutdown(korovod_runtime* rt) {
  Status s = rt->runtime->shutdown();
  return s.is_ok() ? KOROVOD_OK : fail(rt, s);
}

void korovod_destroy(korovod_runtime* rt) { delete rt; }
int korovod_is_initialized(const korovod_runtime* rt) { return rt && rt->runtime->is_initialized(); }

const char* korovod_last_error(const korovod_runtime* rt) {
  std::lock_guard lock(rt->mu);
  return rt->last_error.c_str();
}

int korovod_rank(const korovod_runtime* rt) { return rt ? rt->runtime->rank() : -1; }
int korovod_size(const korovod_runtime* rt) { return rt ? rt->runtime->size() : -1; }
int korovod_local_rank(const korovod_runtime* rt) { return rt ? rt->runtime->local_rank() : -1; }
int korovod_local_size(const korovod_runtime* rt) { return rt ? rt->runtime->local_size() : -1; }
int korovod_cross_rank(const korovod_runtime* rt) { return rt ? rt->runtime->cross_rank() : -1; }
int korovod_cross_size(const korovod_runtime* rt) { return rt ? rt->runtime->cross_size() : -1; }
int korovod_is_homogeneous(const korovod_runtime* rt) { return rt ? rt->runtime->is_homogeneous() : -1; }
int korovod_mpi_built(void) { return korovod::mpi_built(); }
int korovod_mpi_enabled(const korovod_runtime* rt) { return rt && rt->runtime->transport_name() == "MPI"; }
int korovod_mpi_threads_supported(void) { return korovod::mpi_threads_supported(); }
int korovod_nccl_built(void) { return korovod::nccl_built(); }
int korovod_gloo_built(void) { return korovod::gloo_built(); }
int korovod_cuda_built(void) { return korovod::cuda_built(); }

int64_t korovod_allreduce(korovod_runtime* rt, const char* name, const korovod_tensor* input,
                          const korovod_tensor* output, int op, double prescale, double postscale, int ps) {
  return handle_or_error(rt, rt->runtime->allreduce(name_of(name), view(input), view(output),
                                                    static_cast<korovod::ReduceOp>(op), prescale, postscale, ps));
}

int64_t korovod_allgather(korovod_runtime* rt, const char* name, const korovod_tensor* input, int ps) {
  return handle_or_error(rt, rt->runtime->allgather(name_of(name), view(input), ps));
}

int64_t korovod_broadcast(korovod_runtime* rt, const char* name, const korovod_tensor* tensor, int root, int ps) {
  return handle_or_error(rt, rt->runtime->broadcast(name_of(name), view(tensor), root, ps));
}

int64_t korovod_alltoall(korovod_runtime* rt, const char* name, const korovod_tensor* input,
                         const int32_t* splits, int num_splits, int ps) {
  std::vector<int32_t> s(splits, splits + (splits ? num_splits : 0));
  return handle_or_error(rt, rt->runtime->alltoall(name_of(name), view(input), std::move(s), ps));
}

int64_t korovod_reducescatter(korovod_runtime* rt, const char* name, const korovod_tensor* input, int op,
                              double prescale, double postscale, int ps) {
  return handle_or_error(rt, rt->runtime->reducescatter(name_of(name), view(input), static_cast<korovod::ReduceOp>(op),
                                                        prescale, postscale, ps));
}

int64_t korovod_barrier(korovod_runtime* rt, int ps) { return handle_or_error(rt, rt->runtime->barrier(ps)); }
int64_t korovod_join(korovod_runtime* rt, int device) { return handle_or_error(rt, rt->runtime->join(device)); }

int korovod_grouped_allreduce(korovod_runtime* rt, const char* const* names, const korovod_tensor* inputs,
                              const korovod_tensor* outputs, int n, int op, double prescale, double postscale,
                              int ps, int64_t* handles_out) {
  std::vector<std::string> ns;
  std::vector<korovod::TensorView> ins, outs;
  for (int i = 0; i < n; ++i) {
    ns.push_back(name_of(names ? names[i] : nullptr));
    ins.push_back(view(&inputs[i]));
    outs.push_back(view(&outputs[i]));
  }
  auto handles = rt->runtime->grouped_allreduce(ns, ins, outs, static_cast<korovod::ReduceOp>(op), prescale,
                                                postscale, ps);
  if (!handles.is_ok()) return fail(rt, handles.status());
  for (int i = 0; i < n; ++i) handles_out[i] = (*handles)[i];
  return KOROVOD_OK;
}

int korovod_poll(korovod_runtime* rt, int64_t handle) {
  auto done = rt->runtime->poll(handle);
  return done.is_ok() ? (*done ? 1 : 0) : fail(rt, done.status());
}

int korovod_wait(korovod_runtime* rt, int64_t handle) { return code_of(rt->runtime->wait(handle)); }

const char* korovod_handle_error(korovod_runtime* rt, int64_t handle) {
  Status s = rt->runtime->wait_for(handle, 0.0);
  std::lock_guard lock(rt->mu);
  rt->handle_error = s.is_ok() ? "" : s.message();
  return rt->handle_error.c_str();
}

int korovod_handle_output(korovod_runtime* rt, int64_t handle, void** data, int* ndim, int64_t* shape, int max_dims) {
  auto out = rt->runtime->output(handle);
  if (!out.is_ok()) return fail(rt, out.status());
  *data = out->data;
  *ndim = static_cast<int>(out->shape.size());
  for (int i = 0; i < *ndim && i < max_dims; ++i) shape[i] = out->shape[i];
  return KOROVOD_OK;
}

int korovod_handle_received_splits(korovod_runtime* rt, int64_t handle, int32_t* splits, int max_splits) {
  auto out = rt->runtime->output(handle);
  if (!out.is_ok()) return fail(rt, out.status());
  const int n = static_cast<int>(out->received_splits.size());
  for (int i = 0; i < n && i < max_splits; ++i) splits[i] = out->received_splits[i];
  return n;
}

int korovod_handle_last_joined_rank(korovod_runtime* rt, int64_t handle) {
  auto out = rt->runtime->output(handle);
  return out.is_ok() ? out->last_joined_rank : fail(rt, out.status());
}

void korovod_release(korovod_runtime* rt, int64_t handle) { rt->runtime->release(handle); }

int korovod_add_process_set(korovod_runtime* rt, const int* ranks, int nranks) {
  auto id = rt->runtime->add_process_set(std::vector<int>(ranks, ranks + nranks));
  return id.is_ok() ? *id : fail(rt, id.status());
}

int korovod_remove_process_set(korovod_runtime* rt, int id) {
  Status s = rt->runtime->remove_process_set(id);
  return s.is_ok() ? KOROVOD_OK : fail(rt, s);
}

int korovod_process_set_rank(korovod_runtime* rt, int id) {
  auto r = rt->runtime->process_set_rank(id);
  return r.is_ok() ? *r : fail(rt, r.status());
}

int korovod_process_set_size(korovod_runtime* rt, int id) {
  auto r = rt->runtime->process_set_size(id);
  return r.is_ok() ? *r : fail(rt, r.status());
}

int korovod_process_set_included(korovod_runtime* rt, int id) {
  auto r = rt->runtime->process_set_rank(id);
  return r.is_ok() ? (*r >= 0 ? 1 : 0) : fail(rt, r.status());
}

int korovod_start_timeline(korovod_runtime* rt, const char* path, int mark_cycles) {
  Status s = rt->runtime->start_timeline(path ? path : "", mark_cycles != 0);
  return s.is_ok() ? KOROVOD_OK : fail(rt, s);
}

int korovod_stop_timeline(korovod_runtime* rt) {
  Status s = rt->runtime->stop_timeline();
  return s.is_ok() ? KOROVOD_OK : fail(rt, s);
}

}  // extern "C"
