// The C ABI, part 1: library queries, lifecycle (which control plane a job starts on) and the
// runtime's queries. Operations and handles: c_api_ops.cc.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "capi/capi_internal.h"
#include "capi/mpi_loader.h"
#include "korovod/tcp.h"
#ifdef KOROVOD_HAVE_NCCL
#include <nccl.h>
#endif

namespace korovod::capi {
namespace {

// Which control plane korovod_init_ex starts (c_api.h, KOROVOD_CONTROLLER_AUTO): an explicit MPI
// communicator wins, then a rendezvous store in the environment (a launcher without mpirun),
// then mpirun's environment, else a world of this process alone.
Result<std::unique_ptr<Runtime>> start_runtime(const korovod_init_options& o, std::vector<std::vector<int>> sets) {
  const EnvMap env = process_environment();
  const bool mpi_asked = o.mpi_comm != nullptr || o.num_comm_ranks > 0;
  int controller = o.controller;
  if (controller == KOROVOD_CONTROLLER_AUTO) {
    if (mpi_asked || (!tcp_rendezvous_configured(env) && !mpi_launch_variable(env).empty())) {
      controller = KOROVOD_CONTROLLER_MPI;
    } else if (tcp_rendezvous_configured(env)) {
      controller = KOROVOD_CONTROLLER_TCP;
    } else if (elastic_mode(env)) {
      return Status::invalid_argument(
          "KOROVOD_ELASTIC=1 but no rendezvous store is named (KOROVOD_RENDEZVOUS_ADDR): elastic jobs start under "
          "korovodrun --min-np/--max-np, which hosts it");
    } else {
      return init_solo_runtime(std::move(sets));
    }
  }
  if (controller != KOROVOD_CONTROLLER_TCP && elastic_mode(env)) {
    return Status::invalid_argument("elastic mode (KOROVOD_ELASTIC=1) runs on the TCP controller only, not MPI");
  }
  if (controller == KOROVOD_CONTROLLER_TCP) {
    if (mpi_asked) return Status::invalid_argument("an MPI communicator (mpi_comm / comm ranks) needs the MPI controller");
    return init_tcp_runtime(std::move(sets));
  }
  if (controller != KOROVOD_CONTROLLER_MPI) {
    return Status::invalid_argument(fmt::format("unknown controller {}", o.controller));
  }
  Result<const MpiPlugin*> plugin = load_mpi_plugin();
  if (!plugin.is_ok()) {
    const std::string var = mpi_launch_variable(env);
    const std::string why = !var.empty()              ? fmt::format("this process was started by mpirun ({} is set)", var)
                            : o.mpi_comm != nullptr    ? std::string("an MPI communicator was passed to init")
                            : o.num_comm_ranks > 0     ? std::string("init(comm=[ranks]) was asked for, which needs MPI")
                                                       : std::string("the MPI controller was asked for");
    return Status::precondition(fmt::format("{}, but MPI could not be loaded: {}", why, plugin.status().message()));
  }
  MpiStartRequest request;
  request.mpi_comm = o.mpi_comm;
  if (o.num_comm_ranks > 0) request.comm_ranks.assign(o.comm_ranks, o.comm_ranks + o.num_comm_ranks);
  request.process_sets = std::move(sets);
  return (*plugin)->start(request);
}

Result<std::vector<std::vector<int>>> read_sets(const int32_t* ranks, const int32_t* sizes, int n) {
  std::vector<std::vector<int>> sets;
  if (n < 0 || (n > 0 && !sizes)) return Status::invalid_argument("process sets: bad num_sets or set_sizes");
  for (int i = 0, offset = 0; i < n; offset += sizes[i], ++i) {
    if (sizes[i] < 0 || (sizes[i] > 0 && !ranks)) {
      return Status::invalid_argument(fmt::format("process set {}: bad size {} or no ranks", i + 1, sizes[i]));
    }
    sets.emplace_back(ranks + offset, ranks + offset + sizes[i]);
  }
  return sets;
}

int query(const korovod_runtime* rt, int korovod::WorldInfo::*field) { return rt ? rt->world.*field : -1; }

}  // namespace

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
  if (rt) {
    MutexLock lock(rt->mu);
    rt->last_errors[std::this_thread::get_id()] = s.message();
  }
  return code_of(s);
}

void copy_text(const std::string& text, char* buf, int len) {
  if (!buf || len <= 0) return;
  const size_t n = std::min(text.size(), static_cast<size_t>(len - 1));
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
}

std::shared_ptr<Runtime> runtime_of(const korovod_runtime* rt) {
  if (!rt) return nullptr;
  MutexLock lock(rt->mu);
  return rt->runtime;
}

Status not_running() { return Status::not_initialized("korovod is not initialised (shut down); call korovod_init"); }

korovod_runtime* wrap(std::unique_ptr<Runtime> runtime) {
  auto* rt = new korovod_runtime();
  rt->world = {runtime->rank(),       runtime->size(),       runtime->local_rank(), runtime->local_size(),
               runtime->cross_rank(), runtime->cross_size(), runtime->is_homogeneous(), runtime->elastic_round()};
  rt->transport_name = runtime->transport_name();
  rt->backend_names = fmt::format("{}", fmt::join(runtime->backend_names(), ","));
  MutexLock lock(rt->mu);  // not shared yet; the lock keeps the analysis simple
  rt->runtime = std::move(runtime);
  return rt;
}

}  // namespace korovod::capi

using namespace korovod::capi;
using korovod::Status;

extern "C" {

const char* korovod_version(void) { return KOROVOD_VERSION; }

int korovod_launched_by_mpi(void) { return mpi_launch_variable(korovod::process_environment()).empty() ? 0 : 1; }

int korovod_mpi_available(char* why, int why_len) {
  korovod::Result<const korovod::MpiPlugin*> plugin = load_mpi_plugin();
  copy_text(plugin.is_ok() ? "" : plugin.status().message(), why, why_len);
  return plugin.is_ok() ? 1 : 0;
}

int korovod_init_ex(korovod_runtime** out, const korovod_init_options* options, char* error_text, int error_len) {
  if (!out) {
    copy_text("korovod_init: out is NULL", error_text, error_len);
    return KOROVOD_ERR_INVALID_ARGUMENT;
  }
  *out = nullptr;
  korovod_init_options o{};
  if (options) o = *options;
  korovod::Result<std::unique_ptr<korovod::Runtime>> runtime = Status::unknown("not started");
  if (o.num_comm_ranks < 0 || (o.num_comm_ranks > 0 && !o.comm_ranks)) {
    runtime = Status::invalid_argument("comm ranks: bad num_comm_ranks or comm_ranks NULL");
  } else {
    auto sets = read_sets(o.set_ranks, o.set_sizes, o.num_sets);
    runtime = sets.is_ok() ? start_runtime(o, std::move(sets).value()) : sets.status();
  }
  if (!runtime.is_ok()) {
    copy_text(runtime.status().message(), error_text, error_len);
    return code_of(runtime.status());
  }
  *out = wrap(std::move(runtime).value());
  return KOROVOD_OK;
}

int korovod_init(korovod_runtime** out, const void* mpi_comm, const int* set_ranks, const int* set_sizes,
                 int num_sets, char* error_text, int error_len) {
  korovod_init_options o{};
  o.controller = KOROVOD_CONTROLLER_AUTO;
  o.mpi_comm = mpi_comm;
  o.set_ranks = set_ranks;
  o.set_sizes = set_sizes;
  o.num_sets = num_sets;
  return korovod_init_ex(out, &o, error_text, error_len);
}

int korovod_shutdown(korovod_runtime* rt) {
  if (!rt) return KOROVOD_ERR_NOT_INITIALIZED;
  std::shared_ptr<korovod::Runtime> runtime;
  {
    korovod::MutexLock lock(rt->mu);
    runtime.swap(rt->runtime);
  }
  if (!runtime) return KOROVOD_OK;  // idempotent
  Status s = runtime->shutdown();
  return s.is_ok() ? KOROVOD_OK : fail(rt, s);
}

void korovod_destroy(korovod_runtime* rt) {
  if (!rt) return;
  (void)korovod_shutdown(rt);
  delete rt;
}

int korovod_is_initialized(const korovod_runtime* rt) {
  auto runtime = runtime_of(rt);
  return runtime && runtime->is_initialized() ? 1 : 0;
}

const char* korovod_last_error(const korovod_runtime* rt) {
  if (!rt) return "korovod is not initialised";
  korovod::MutexLock lock(rt->mu);
  auto it = rt->last_errors.find(std::this_thread::get_id());
  return it == rt->last_errors.end() ? "" : it->second.c_str();
}

int korovod_elastic_enabled(void) { return korovod::elastic_mode(korovod::process_environment()) ? 1 : 0; }

int64_t korovod_elastic_round(const korovod_runtime* rt) { return rt ? rt->world.elastic_round : -1; }

int korovod_elastic_hosts_version(uint64_t* version, uint32_t* kind, char* error_text, int error_len) {
  if (!version || !kind) {
    copy_text("korovod_elastic_hosts_version: version or kind is NULL", error_text, error_len);
    return KOROVOD_ERR_INVALID_ARGUMENT;
  }
  korovod::Result<korovod::ElasticHostsUpdate> v = korovod::read_elastic_hosts_version(korovod::process_environment());
  if (!v.is_ok()) {
    copy_text(v.status().message(), error_text, error_len);
    return code_of(v.status());
  }
  *version = v->version;
  *kind = v->kind;
  copy_text("", error_text, error_len);
  return KOROVOD_OK;
}

int korovod_elastic_published_round(uint64_t* round, char* error_text, int error_len) {
  if (!round) {
    copy_text("korovod_elastic_published_round: round is NULL", error_text, error_len);
    return KOROVOD_ERR_INVALID_ARGUMENT;
  }
  korovod::Result<int64_t> r = korovod::read_elastic_published_round(korovod::process_environment());
  if (!r.is_ok()) {
    copy_text(r.status().message(), error_text, error_len);
    return code_of(r.status());
  }
  *round = static_cast<uint64_t>(*r);
  copy_text("", error_text, error_len);
  return KOROVOD_OK;
}

int korovod_rank(const korovod_runtime* rt) { return query(rt, &korovod::WorldInfo::rank); }
int korovod_size(const korovod_runtime* rt) { return query(rt, &korovod::WorldInfo::size); }
int korovod_local_rank(const korovod_runtime* rt) { return query(rt, &korovod::WorldInfo::local_rank); }
int korovod_local_size(const korovod_runtime* rt) { return query(rt, &korovod::WorldInfo::local_size); }
int korovod_cross_rank(const korovod_runtime* rt) { return query(rt, &korovod::WorldInfo::cross_rank); }
int korovod_cross_size(const korovod_runtime* rt) { return query(rt, &korovod::WorldInfo::cross_size); }
int korovod_is_homogeneous(const korovod_runtime* rt) { return rt ? (rt->world.homogeneous ? 1 : 0) : -1; }
int korovod_mpi_built(void) { return korovod::mpi_built() ? 1 : 0; }
int korovod_mpi_enabled(const korovod_runtime* rt) { return rt && rt->transport_name == "MPI" ? 1 : 0; }

int korovod_mpi_threads_supported(void) {
  const korovod::MpiPlugin* plugin = loaded_mpi_plugin();
  return plugin && plugin->threads_supported() ? 1 : 0;
}

int korovod_nccl_built(void) {
#ifdef KOROVOD_HAVE_NCCL
  return NCCL_VERSION_CODE;
#else
  return 0;
#endif
}

int korovod_gloo_built(void) { return korovod::gloo_built() ? 1 : 0; }

int korovod_cuda_built(void) {
#ifdef KOROVOD_HAVE_NCCL
  return 1;  // the NCCL backend is built on the CUDA runtime
#else
  return 0;
#endif
}

const char* korovod_transport_name(const korovod_runtime* rt) { return rt ? rt->transport_name.c_str() : ""; }
const char* korovod_backend_names(const korovod_runtime* rt) { return rt ? rt->backend_names.c_str() : ""; }

int korovod_add_process_set(korovod_runtime* rt, const int* ranks, int nranks) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  if (nranks < 0 || (nranks > 0 && !ranks)) return fail(rt, Status::invalid_argument("add_process_set: bad ranks"));
  auto id = runtime->add_process_set(std::vector<int>(ranks, ranks + nranks));
  return id.is_ok() ? *id : fail(rt, id.status());
}

int korovod_remove_process_set(korovod_runtime* rt, int id) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  Status s = runtime->remove_process_set(id);
  return s.is_ok() ? KOROVOD_OK : fail(rt, s);
}

int korovod_process_set_rank(korovod_runtime* rt, int id) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  auto r = runtime->process_set_rank(id);
  return r.is_ok() ? *r : fail(rt, r.status());
}

int korovod_process_set_size(korovod_runtime* rt, int id) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  auto r = runtime->process_set_size(id);
  return r.is_ok() ? *r : fail(rt, r.status());
}

int korovod_process_set_included(korovod_runtime* rt, int id) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  auto r = runtime->process_set_rank(id);
  return r.is_ok() ? (*r >= 0 ? 1 : 0) : fail(rt, r.status());
}

int korovod_process_set_ids(korovod_runtime* rt, int* ids, int max_ids) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  const std::vector<int> all = runtime->process_set_ids();
  for (int i = 0; ids && i < max_ids && i < static_cast<int>(all.size()); ++i) ids[i] = all[i];
  return static_cast<int>(all.size());
}

int korovod_process_set_ranks(korovod_runtime* rt, int id, int* ranks, int max_ranks) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  auto all = runtime->process_set_ranks(id);
  if (!all.is_ok()) return fail(rt, all.status());
  for (int i = 0; ranks && i < max_ranks && i < static_cast<int>(all->size()); ++i) ranks[i] = (*all)[i];
  return static_cast<int>(all->size());
}

int korovod_start_timeline(korovod_runtime* rt, const char* path, int mark_cycles) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  Status s = runtime->start_timeline(path ? path : "", mark_cycles != 0);
  return s.is_ok() ? KOROVOD_OK : fail(rt, s);
}

int korovod_stop_timeline(korovod_runtime* rt) {
  auto runtime = runtime_of(rt);
  if (!runtime) return fail(rt, not_running());
  Status s = runtime->stop_timeline();
  return s.is_ok() ? KOROVOD_OK : fail(rt, s);
}

}  // extern "C"
