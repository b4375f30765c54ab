// korovod's TensorFlow graph ops: KorovodAllreduce, KorovodAllgather, KorovodBroadcast,
// KorovodAlltoall and KorovodReducescatter, as asynchronous CPU kernels (Horovod's own TensorFlow
// ops are AsyncOpKernels too). A kernel queues its collective with korovod_enqueue_async and
// returns its thread to TensorFlow at once; the runtime's background thread ends the kernel when
// the collective is done. So a graph may hold any number of independent collectives whatever its
// inter-op threads, and a failure reaches TensorFlow with its own code (ranks that disagree:
// FailedPreconditionError; a refused argument: InvalidArgumentError; a lost peer: AbortedError).
//
// Written against TensorFlow's stable C API only (tf_c_api.h), so this library serves every
// TensorFlow that has asynchronous C kernels. korovod.tensorflow loads it with
// tf.load_op_library and binds it to the runtime of hvd.init() (korovod_tf_bind).
//
// Process-wide state, unlike the rest of korovod: TensorFlow's op and kernel registries are
// process-wide, and the kernels it creates reach korovod only through what this library holds.
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "korovod/c_api.h"
#include "tf_c_api.h"

#define KOROVOD_TF_EXPORT extern "C" __attribute__((visibility("default")))

namespace korovod::tf {
namespace {

struct Library {
  Api api{};
  std::string load_error;  // "" once the ops are registered
  std::shared_mutex mu;    // kernels queue under a shared lock; bind() swaps the runtime exclusively
  korovod_runtime* runtime = nullptr;
};

Library& library() {
  static Library lib;
  return lib;
}

// ---------------------------------------------------------------- types and errors

struct TypeInfo {
  int korovod;
  int size;
};

bool type_info(int tf_type, TypeInfo& out) {
  switch (tf_type) {
    case kUint8: out = {KOROVOD_UINT8, 1}; return true;
    case kInt8: out = {KOROVOD_INT8, 1}; return true;
    case kUint16: out = {KOROVOD_UINT16, 2}; return true;
    case kInt16: out = {KOROVOD_INT16, 2}; return true;
    case kInt32: out = {KOROVOD_INT32, 4}; return true;
    case kInt64: out = {KOROVOD_INT64, 8}; return true;
    case kHalf: out = {KOROVOD_FLOAT16, 2}; return true;
    case kBfloat16: out = {KOROVOD_BFLOAT16, 2}; return true;
    case kFloat: out = {KOROVOD_FLOAT32, 4}; return true;
    case kDouble: out = {KOROVOD_FLOAT64, 8}; return true;
    case kBool: out = {KOROVOD_BOOL, 1}; return true;
    default: return false;
  }
}

// The TensorFlow error code for a C ABI error code, as Horovod's ops map its statuses.
int tf_code(int korovod_code) {
  switch (korovod_code) {
    case KOROVOD_ERR_INVALID_ARGUMENT: return kInvalidArgument;
    case KOROVOD_ERR_PRECONDITION: return kFailedPrecondition;
    case KOROVOD_ERR_NOT_INITIALIZED: return kFailedPrecondition;
    case KOROVOD_ERR_ABORTED: return kAborted;
    default: return kUnknown;
  }
}

// The text of a failure: the runtime's, which names the tensor and the ranks. A lost peer or a
// timed-out collective (Python: HorovodInternalError) says so first, as the same failure does on
// the tf.py_function path, so korovod.tensorflow.elastic.run recognises it in a graph's error.
std::string failure_text(int korovod_code, const std::string& text) {
  if (korovod_code == KOROVOD_ERR_ABORTED || korovod_code == KOROVOD_ERR_UNKNOWN) {
    return "HorovodInternalError: " + text;
  }
  return text;
}

const char kNotInitialized[] =
    "korovod has not been initialized or was shut down; call hvd.init() before running korovod ops";

// ---------------------------------------------------------------- kernels

// What one node of the graph asks for (its attributes).
struct Kernel {
  int type = KOROVOD_OP_ALLREDUCE;
  std::string name;
  int64_t reduce_op = KOROVOD_SUM;
  int64_t root_rank = 0;
  int64_t process_set = 0;
};

struct Status {
  int code = kOk;
  std::string text;
  bool ok() const { return code == kOk; }
};

// TensorFlow's AsyncOpKernel::DoneCallback. The C API hands a kernel the address of ComputeAsync's
// by-value parameter (tensorflow/c/kernels.cc, CAsyncOpKernel::ComputeAsync), which dies when
// ComputeAsync returns; a kernel that ends later must move it somewhere that lives on. It is a
// libstdc++ std::function<void()>: the type every C++ TensorFlow op library (Horovod's
// included) receives by value across the same boundary.
using DoneCallback = std::function<void()>;

// One run of a kernel, from ComputeAsync until the runtime's done callback.
class Call {
 public:
  Call(const Kernel& kernel, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done)
      : api_(library().api),
        kernel_(kernel),
        ctx_(ctx),
        done_(std::move(*reinterpret_cast<DoneCallback*>(done))) {}

  ~Call() {
    for (TF_Tensor* t : tensors_) api_.TF_DeleteTensor(t);
  }

  // Queues the collective; on failure, the kernel is still to be ended (end()).
  Status start() {
    TF_Tensor* input = nullptr;
    if (Status s = get_input(0, &input); !s.ok()) return s;
    if (!type_info(api_.TF_TensorType(input), type_)) {
      return {kInvalidArgument, "tensor '" + kernel_.name + "': TensorFlow type " +
                                    std::to_string(api_.TF_TensorType(input)) + " is not supported by korovod"};
    }
    tf_type_ = api_.TF_TensorType(input);
    for (int i = 0; i < api_.TF_NumDims(input); ++i) shape_.push_back(api_.TF_Dim(input, i));
    double scales[2] = {1.0, 1.0};
    const int32_t* splits = nullptr;
    int num_splits = 0;
    if (kernel_.type == KOROVOD_OP_ALLREDUCE || kernel_.type == KOROVOD_OP_REDUCESCATTER) {
      TF_Tensor* t = nullptr;
      if (Status s = get_input(1, &t); !s.ok()) return s;
      if (api_.TF_TensorByteSize(t) != sizeof scales) {
        return {kInvalidArgument, "tensor '" + kernel_.name + "': scales must be [prescale, postscale]"};
      }
      const auto* v = static_cast<const double*>(api_.TF_TensorData(t));
      scales[0] = v[0];
      scales[1] = v[1];
    } else if (kernel_.type == KOROVOD_OP_ALLTOALL) {
      TF_Tensor* t = nullptr;
      if (Status s = get_input(1, &t); !s.ok()) return s;
      num_splits = static_cast<int>(api_.TF_TensorByteSize(t) / sizeof(int32_t));
      if (num_splits > 0) splits = static_cast<const int32_t*>(api_.TF_TensorData(t));  // none: even split
    }
    void* output = nullptr;
    const bool runtime_allocates = kernel_.type == KOROVOD_OP_ALLGATHER || kernel_.type == KOROVOD_OP_ALLTOALL ||
                                   kernel_.type == KOROVOD_OP_REDUCESCATTER;
    if (!runtime_allocates) {
      TF_Tensor* out = nullptr;
      if (Status s = allocate(0, tf_type_, shape_, &out); !s.ok()) return s;
      output = api_.TF_TensorData(out);
    }
    Library& lib = library();
    std::shared_lock<std::shared_mutex> lock(lib.mu);
    if (!lib.runtime) return {kFailedPrecondition, kNotInitialized};
    const int rc = korovod_enqueue_async(
        lib.runtime, kernel_.type, kernel_.name.c_str(), api_.TF_TensorData(input), output, type_.korovod,
        static_cast<int>(shape_.size()), shape_.data(), /*device=*/-1, static_cast<int>(kernel_.reduce_op),
        scales[0], scales[1], static_cast<int>(kernel_.root_rank), splits, num_splits,
        static_cast<int>(kernel_.process_set), /*ready=*/nullptr, runtime_allocates ? &Call::alloc : nullptr,
        &Call::done, this);
    // Done may have run already (on the runtime's thread, or on this one for an op enqueued after
    // the engine stopped): `this` is gone unless rc failed.
    if (rc != KOROVOD_OK) return {tf_code(rc), failure_text(rc, korovod_last_error(lib.runtime))};
    return {};
  }

  // Sets the kernel's failure (unless s is OK) and hands the node back to TensorFlow.
  void end(const Status& s) {
    if (!s.ok()) {
      TF_Status* status = api_.TF_NewStatus();
      api_.TF_SetStatus(status, s.code, s.text.c_str());
      api_.TF_OpKernelContext_Failure(ctx_, status);
      api_.TF_DeleteStatus(status);
    }
    DoneCallback done = std::move(done_);
    const Api& api = api_;
    delete this;  // the inputs and outputs this call held are released first
    api.TF_RunAsyncOpKernelDoneCallback(reinterpret_cast<TF_AsyncOpKernelDoneCallback*>(&done));
  }

 private:
  static int alloc(void* arg, int ndim, const int64_t* shape, void** data) {
    auto* call = static_cast<Call*>(arg);
    TF_Tensor* out = nullptr;
    const Status s = call->allocate(0, call->tf_type_, std::vector<int64_t>(shape, shape + ndim), &out);
    if (!s.ok()) return 1;
    *data = call->api_.TF_TensorData(out);
    return 0;
  }

  static void done(void* arg, const korovod_op_result* result) {
    auto* call = static_cast<Call*>(arg);
    Status s;
    if (result->status != KOROVOD_OK) {
      s = {tf_code(result->status), failure_text(result->status, result->error_text)};
    } else if (call->kernel_.type == KOROVOD_OP_ALLTOALL) {
      TF_Tensor* received = nullptr;
      s = call->allocate(1, kInt32, {result->num_received_splits}, &received);
      if (s.ok() && result->num_received_splits > 0) {
        auto* out = static_cast<int32_t*>(call->api_.TF_TensorData(received));
        for (int i = 0; i < result->num_received_splits; ++i) out[i] = result->received_splits[i];
      }
    }
    call->end(s);
  }

  Status get_input(int i, TF_Tensor** out) {
    TF_Status* status = api_.TF_NewStatus();
    api_.TF_GetInput(ctx_, i, out, status);
    Status s = take(status);
    if (s.ok()) tensors_.push_back(*out);
    return s;
  }

  Status allocate(int index, int dtype, const std::vector<int64_t>& shape, TF_Tensor** out) {
    TypeInfo info{};
    type_info(dtype, info);
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    TF_Status* status = api_.TF_NewStatus();
    *out = api_.TF_AllocateOutput(ctx_, index, dtype, shape.data(), static_cast<int>(shape.size()),
                                  static_cast<size_t>(n) * static_cast<size_t>(info.size), status);
    Status s = take(status);
    if (s.ok() && *out) tensors_.push_back(*out);
    return s;
  }

  Status take(TF_Status* status) {
    Status s{api_.TF_GetCode(status), api_.TF_GetCode(status) == kOk ? "" : api_.TF_Message(status)};
    api_.TF_DeleteStatus(status);
    return s;
  }

  const Api& api_;
  const Kernel& kernel_;  // lives as long as the graph's node, beyond every run of it
  TF_OpKernelContext* ctx_;
  DoneCallback done_;
  std::vector<TF_Tensor*> tensors_;  // inputs and outputs this call holds a reference to
  TypeInfo type_{};
  int tf_type_ = 0;
  std::vector<int64_t> shape_;
};

template <int Type>
void* create_kernel(TF_OpKernelConstruction* ctx) {
  const Api& api = library().api;
  auto kernel = std::make_unique<Kernel>();
  kernel->type = Type;
  TF_Status* status = api.TF_NewStatus();
  auto get_int = [&](const char* attr, int64_t& value) {
    if (api.TF_GetCode(status) == kOk) api.TF_OpKernelConstruction_GetAttrInt64(ctx, attr, &value, status);
  };
  int32_t list_size = 0, total_size = 0;
  api.TF_OpKernelConstruction_GetAttrSize(ctx, "tensor_name", &list_size, &total_size, status);
  if (api.TF_GetCode(status) == kOk) {
    kernel->name.resize(static_cast<size_t>(total_size) + 1);
    api.TF_OpKernelConstruction_GetAttrString(ctx, "tensor_name", kernel->name.data(), kernel->name.size(), status);
    kernel->name.resize(static_cast<size_t>(total_size));
  }
  get_int("process_set_id", kernel->process_set);
  if (Type == KOROVOD_OP_ALLREDUCE || Type == KOROVOD_OP_REDUCESCATTER) get_int("reduce_op", kernel->reduce_op);
  if (Type == KOROVOD_OP_BROADCAST) get_int("root_rank", kernel->root_rank);
  const bool ok = api.TF_GetCode(status) == kOk;
  if (!ok) api.TF_OpKernelConstruction_Failure(ctx, status);
  api.TF_DeleteStatus(status);
  return ok ? kernel.release() : nullptr;
}

void delete_kernel(void* kernel) { delete static_cast<Kernel*>(kernel); }

void compute_async(void* kernel, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  auto* call = new Call(*static_cast<Kernel*>(kernel), ctx, done);
  const Status s = call->start();
  if (!s.ok()) call->end(s);  // else the runtime's done callback ends it
}

// ---------------------------------------------------------------- registration

void same_shape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  const Api& api = library().api;
  TF_ShapeHandle* shape = api.TF_NewShapeHandle();
  api.TF_ShapeInferenceContextGetInput(ctx, 0, shape, status);
  if (api.TF_GetCode(status) == kOk) api.TF_ShapeInferenceContextSetOutput(ctx, 0, shape, status);
  api.TF_DeleteShapeHandle(shape);
}

void unknown_shape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  library().api.TF_ShapeInferenceContextSetUnknownShape(ctx, status);  // korovod.tensorflow sets what it knows
}

constexpr const char kTypes[] = "T: {uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool}";

struct OpSpec {
  const char* name;
  int type;
  std::vector<const char*> attrs, inputs, outputs;
  ShapeFn shape;
  CreateFn create;
};

std::string register_op(const Api& api, const OpSpec& spec) {
  TF_Status* status = api.TF_NewStatus();
  TF_OpDefinitionBuilder* b = api.TF_NewOpDefinitionBuilder(spec.name);
  api.TF_OpDefinitionBuilderAddAttr(b, kTypes);
  api.TF_OpDefinitionBuilderAddAttr(b, "tensor_name: string");
  api.TF_OpDefinitionBuilderAddAttr(b, "process_set_id: int = 0");
  for (const char* a : spec.attrs) api.TF_OpDefinitionBuilderAddAttr(b, a);
  for (const char* i : spec.inputs) api.TF_OpDefinitionBuilderAddInput(b, i);
  for (const char* o : spec.outputs) api.TF_OpDefinitionBuilderAddOutput(b, o);
  // Stateful: never folded, pruned as a duplicate or reordered by tf.function's automatic
  // control dependencies (every rank queues its collectives in program order).
  api.TF_OpDefinitionBuilderSetIsStateful(b, true);
  api.TF_OpDefinitionBuilderSetShapeInferenceFunction(b, spec.shape);
  api.TF_RegisterOpDefinition(b, status);
  if (api.TF_GetCode(status) == kOk) {
    TF_KernelBuilder* k = api.TF_NewAsyncKernelBuilder(spec.name, "CPU", spec.create, &compute_async, &delete_kernel);
    api.TF_RegisterKernelBuilder((std::string(spec.name) + "Op").c_str(), k, status);
  }
  std::string error = api.TF_GetCode(status) == kOk ? "" : std::string(spec.name) + ": " + api.TF_Message(status);
  api.TF_DeleteStatus(status);
  return error;
}

std::string register_all(Library& lib) {
  if (std::string e = load(lib.api); !e.empty()) return e;
  const OpSpec specs[] = {
      {"KorovodAllreduce", KOROVOD_OP_ALLREDUCE, {"reduce_op: int"}, {"tensor: T", "scales: double"},
       {"output: T"}, &same_shape, &create_kernel<KOROVOD_OP_ALLREDUCE>},
      {"KorovodAllgather", KOROVOD_OP_ALLGATHER, {}, {"tensor: T"}, {"output: T"}, &unknown_shape,
       &create_kernel<KOROVOD_OP_ALLGATHER>},
      {"KorovodBroadcast", KOROVOD_OP_BROADCAST, {"root_rank: int"}, {"tensor: T"}, {"output: T"}, &same_shape,
       &create_kernel<KOROVOD_OP_BROADCAST>},
      {"KorovodAlltoall", KOROVOD_OP_ALLTOALL, {}, {"tensor: T", "splits: int32"},
       {"output: T", "received_splits: int32"}, &unknown_shape, &create_kernel<KOROVOD_OP_ALLTOALL>},
      {"KorovodReducescatter", KOROVOD_OP_REDUCESCATTER, {"reduce_op: int"}, {"tensor: T", "scales: double"},
       {"output: T"}, &unknown_shape, &create_kernel<KOROVOD_OP_REDUCESCATTER>},
  };
  for (const OpSpec& spec : specs) {
    if (std::string e = register_op(lib.api, spec); !e.empty()) return e;
  }
  return "";
}

// Registration runs when tf.load_op_library loads this library, as TensorFlow's own op
// libraries register theirs.
const bool registered = [] {
  Library& lib = library();
  lib.load_error = register_all(lib);
  return true;
}();

}  // namespace
}  // namespace korovod::tf

// The runtime the kernels queue on: korovod.tensorflow binds it after hvd.init() and unbinds it
// (NULL) before korovod_shutdown; kernels run while none is bound fail with FailedPrecondition.
// Waits for kernels that are queueing at that moment.
KOROVOD_TF_EXPORT void korovod_tf_bind(korovod_runtime* rt) {
  auto& lib = korovod::tf::library();
  std::unique_lock<std::shared_mutex> lock(lib.mu);
  lib.runtime = rt;
}

// "" when the ops are registered, else why not (no TensorFlow loaded, or one without the C
// functions these kernels need).
KOROVOD_TF_EXPORT const char* korovod_tf_load_error(void) {
  (void)korovod::tf::registered;
  return korovod::tf::library().load_error.c_str();
}
