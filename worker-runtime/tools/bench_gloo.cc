#include "bench_gloo.h"

#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>

#include "kernels/kernels.h"

namespace korovod::bench {
namespace {

// Gloo's own element-wise functions for the types it has (what Horovod passes it); korovod's
// reduction kernel for the 16-bit floats, which Gloo cannot add (no bfloat16 type at all).
gloo::AllreduceOptions::Func reduce_function(DataType dtype, ReduceOp op) {
  using Fn = void (*)(void*, const void*, const void*, size_t);  // picks the 4-argument overload
  auto typed = [op]<typename T>(T*) -> gloo::AllreduceOptions::Func {
    switch (op) {
      case ReduceOp::kMin: return static_cast<Fn>(&gloo::min<T>);
      case ReduceOp::kMax: return static_cast<Fn>(&gloo::max<T>);
      case ReduceOp::kProduct: return static_cast<Fn>(&gloo::product<T>);
      default: return static_cast<Fn>(&gloo::sum<T>);
    }
  };
  switch (dtype) {
    case DataType::kFloat32: return typed(static_cast<float*>(nullptr));
    case DataType::kFloat64: return typed(static_cast<double*>(nullptr));
    case DataType::kInt32: return typed(static_cast<int32_t*>(nullptr));
    default:
      return [dtype, op](void* out, const void* a, const void* b, size_t n) {
        const auto count = static_cast<int64_t>(n);
        if (out == b) return kernels::reduce_into(dtype, op, out, a, count);  // ops commute
        if (out != a) std::memcpy(out, a, n * element_size(dtype));
        kernels::reduce_into(dtype, op, out, b, count);
      };
  }
}

// The rendezvous directory: made by rank 0, its name broadcast to the others.
std::string shared_temp_dir(int rank) {
  char path[256] = {};
  if (rank == 0) {
    std::snprintf(path, sizeof path, "%s", (std::filesystem::temp_directory_path() / "korovod-bench-gloo-XXXXXX").c_str());
    if (mkdtemp(path) == nullptr) path[0] = '\0';
  }
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

}  // namespace

GlooPeer::GlooPeer(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {}
GlooPeer::~GlooPeer() = default;

Result<std::unique_ptr<GlooPeer>> GlooPeer::connect(int rank, int size) {
  const std::string dir = shared_temp_dir(rank);
  if (dir.empty()) return Status::unknown("gloo: cannot create a rendezvous directory");
  std::string error;
  std::shared_ptr<gloo::rendezvous::Context> context;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";  // loopback: one host, as the shared-memory path
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(dir);
    context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(std::chrono::seconds(60));
    context->connectFullMesh(store, device);
  } catch (const std::exception& e) {
    error = e.what();
  }
  int ok = error.empty() ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);  // everyone is connected
  if (rank == 0) std::filesystem::remove_all(dir);
  if (!error.empty()) return Status::unknown(fmt::format("gloo: {}", error));
  if (!all_ok) return Status::unknown("gloo: another rank failed to connect");
  return std::unique_ptr<GlooPeer>(new GlooPeer(std::move(context)));
}

Status GlooPeer::allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) {
  try {
    gloo::AllreduceOptions opts(context_);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
    // Gloo types buffers only by element size; the reduction function knows the real type.
    auto bind = [&]<typename T>(T*) {
      opts.setInput<T>(static_cast<T*>(const_cast<void*>(send)), bytes / sizeof(T));
      opts.setOutput<T>(static_cast<T*>(recv), bytes / sizeof(T));
    };
    switch (element_size(dtype)) {
      case 2: bind(static_cast<uint16_t*>(nullptr)); break;
      case 8: bind(static_cast<uint64_t*>(nullptr)); break;
      default: bind(static_cast<uint32_t*>(nullptr));
    }
    opts.setReduceFunction(reduce_function(dtype, op));
    opts.setTag(tag_++);
    gloo::allreduce(opts);
  } catch (const std::exception& e) {
    return Status::unknown(fmt::format("gloo allreduce: {}", e.what()));
  }
  return Status::ok();
}

}  // namespace korovod::bench
