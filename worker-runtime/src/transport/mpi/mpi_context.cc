#include "transport/mpi/mpi_context.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "kernels/kernels.h"

namespace korovod::mpi {
namespace {

// MPI user functions carry no state, so each (dtype, op) pair is its own instantiation.
template <DataType D, ReduceOp O>
void half_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  kernels::reduce_into(D, O, inout, in, *len);
}

template <DataType D>
void create_ops_for(MPI_Op (&ops)[4]) {
  MPI_Op_create(&half_reduce<D, ReduceOp::kSum>, 1, &ops[0]);
  MPI_Op_create(&half_reduce<D, ReduceOp::kMin>, 1, &ops[1]);
  MPI_Op_create(&half_reduce<D, ReduceOp::kMax>, 1, &ops[2]);
  MPI_Op_create(&half_reduce<D, ReduceOp::kProduct>, 1, &ops[3]);
}

int op_index(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin: return 1;
    case ReduceOp::kMax: return 2;
    case ReduceOp::kProduct: return 3;
    default: return 0;
  }
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// Initialises MPI unless someone has; when korovod does, it registers MPI_Finalize for process
// exit (once: the flag is process state, as MPI's own initialisation is).
Status ensure_initialized(bool threads_disable, int* provided) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) return Status::aborted("MPI was already finalized in this process; it cannot be initialised again");
  if (initialized) {
    MPI_Query_thread(provided);
    return Status::ok();
  }
  const int required = threads_disable ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
  KOROVOD_RETURN_IF_ERROR(mpi_status(MPI_Init_thread(nullptr, nullptr, required, provided), "MPI_Init_thread"));
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit(finalize_at_exit); });
  return Status::ok();
}

// A new communicator of `ranks` of `base`, made by those ranks only (MPI_Comm_create_group is
// collective over the group): a rank outside the list gets an error and makes no MPI call.
Result<MPI_Comm> create_comm_of_ranks(MPI_Comm base, const std::vector<int>& ranks) {
  int me = 0, size = 0;
  MPI_Comm_rank(base, &me);
  MPI_Comm_size(base, &size);
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front() < 0 || sorted.back() >= size || std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return Status::invalid_argument(
        fmt::format("init(comm=[{}]): ranks must be distinct ranks of the {} MPI ranks", fmt::join(ranks, ", "), size));
  }
  if (!std::binary_search(sorted.begin(), sorted.end(), me)) {
    return Status::invalid_argument(fmt::format("rank {} is not part of the communicator of ranks [{}] given to init",
                                                me, fmt::join(ranks, ", ")));
  }
  MPI_Group base_group, group;
  MPI_Comm_group(base, &base_group);
  MPI_Group_incl(base_group, static_cast<int>(ranks.size()), ranks.data(), &group);
  MPI_Comm comm = MPI_COMM_NULL;
  constexpr int kCommRanksTag = 0x6b76;
  const int rc = MPI_Comm_create_group(base, group, kCommRanksTag, &comm);
  MPI_Group_free(&group);
  MPI_Group_free(&base_group);
  KOROVOD_RETURN_IF_ERROR(mpi_status(rc, "MPI_Comm_create_group(init comm ranks)"));
  return comm;
}

}  // namespace

Status mpi_status(int code, const char* what) {
  if (code == MPI_SUCCESS) return Status::ok();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return Status::unknown(fmt::format("{} failed: {}", what, std::string(text, len)));
}

Result<std::shared_ptr<MpiContext>> MpiContext::create(const MPI_Comm* comm, bool threads_disable,
                                                       const std::vector<int>& comm_ranks,
                                                       const std::string& host_name) {
  std::shared_ptr<MpiContext> ctx(new MpiContext());
  KOROVOD_RETURN_IF_ERROR(ensure_initialized(threads_disable, &ctx->provided_));
  if (ctx->provided_ < MPI_THREAD_SERIALIZED) {
    return Status::unknown("MPI provides less than MPI_THREAD_SERIALIZED; korovod's background thread needs it");
  }
  const MPI_Comm base = comm ? *comm : MPI_COMM_WORLD;
  if (comm_ranks.empty()) {
    KOROVOD_RETURN_IF_ERROR(mpi_status(MPI_Comm_dup(base, &ctx->comm_), "MPI_Comm_dup"));
  } else {
    Result<MPI_Comm> sub = create_comm_of_ranks(base, comm_ranks);
    if (!sub.is_ok()) return sub.status();
    ctx->comm_ = *sub;
  }
  MPI_Comm_set_errhandler(ctx->comm_, MPI_ERRORS_RETURN);
  KOROVOD_RETURN_IF_ERROR(ctx->init_topology(host_name));
  ctx->create_half_ops();
  return ctx;
}

Status MpiContext::init_topology(const std::string& host_name) {
  MPI_Comm_rank(comm_, &info_.rank);
  MPI_Comm_size(comm_, &info_.size);
  MPI_Comm local, cross;
  KOROVOD_RETURN_IF_ERROR(mpi_status(
      MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, info_.rank, MPI_INFO_NULL, &local), "MPI_Comm_split_type"));
  MPI_Comm_rank(local, &info_.local_rank);
  MPI_Comm_size(local, &info_.local_size);
  KOROVOD_RETURN_IF_ERROR(mpi_status(MPI_Comm_split(comm_, info_.local_rank, info_.rank, &cross), "MPI_Comm_split"));
  MPI_Comm_rank(cross, &info_.cross_rank);
  MPI_Comm_size(cross, &info_.cross_size);
  int sizes[2] = {info_.local_size, -info_.local_size};
  MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, comm_);
  info_.homogeneous = sizes[0] == -sizes[1];
  MPI_Comm_free(&local);
  MPI_Comm_free(&cross);
  // Every rank's host, for errors that name a lost peer.
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  if (host_name.empty()) {
    MPI_Get_processor_name(mine, &len);
  } else {
    host_name.copy(mine, MPI_MAX_PROCESSOR_NAME - 1);
  }
  std::vector<char> all(static_cast<size_t>(info_.size) * MPI_MAX_PROCESSOR_NAME);
  KOROVOD_RETURN_IF_ERROR(mpi_status(MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                                                   MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm_),
                                     "MPI_Allgather(host names)"));
  for (int r = 0; r < info_.size; ++r) {
    const char* name = all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    hosts_.emplace_back(name, strnlen(name, MPI_MAX_PROCESSOR_NAME));
  }
  return Status::ok();
}

std::string MpiContext::rank_name(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(hosts_.size())) return fmt::format("rank {}", rank);
  return fmt::format("rank {} on host {}", rank, hosts_[static_cast<size_t>(rank)]);
}

void MpiContext::create_half_ops() {
  create_ops_for<DataType::kFloat16>(half_ops_[0]);
  create_ops_for<DataType::kBFloat16>(half_ops_[1]);
  half_ops_created_ = true;
}

MpiContext::~MpiContext() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& row : half_ops_) {
    for (auto& op : row) {
      if (half_ops_created_ && op != MPI_OP_NULL) MPI_Op_free(&op);
    }
  }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

Result<MPI_Comm> MpiContext::create_subcomm(const std::vector<int>& ranks, int tag) const {
  MPI_Group world_group, group;
  MPI_Comm_group(comm_, &world_group);
  MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &group);
  MPI_Comm sub = MPI_COMM_NULL;
  int rc = MPI_Comm_create_group(comm_, group, tag, &sub);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  KOROVOD_RETURN_IF_ERROR(mpi_status(rc, "MPI_Comm_create_group"));
  MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
  return sub;
}

MPI_Datatype MpiContext::datatype(DataType dtype) const {
  switch (dtype) {
    case DataType::kUInt8: case DataType::kBool: return MPI_UINT8_T;
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kUInt16: case DataType::kFloat16: case DataType::kBFloat16: return MPI_UINT16_T;
    case DataType::kInt16: return MPI_INT16_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

MPI_Op MpiContext::op(DataType dtype, ReduceOp op) const {
  if (dtype == DataType::kFloat16) return half_ops_[0][op_index(op)];
  if (dtype == DataType::kBFloat16) return half_ops_[1][op_index(op)];
  if (dtype == DataType::kBool) {
    return op == ReduceOp::kProduct || op == ReduceOp::kMin ? MPI_MIN : MPI_MAX;  // and / or
  }
  switch (op) {
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
    default: return MPI_SUM;
  }
}

}  // namespace korovod::mpi
