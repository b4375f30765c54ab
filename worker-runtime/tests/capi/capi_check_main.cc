// rt_capi_check: the C ABI across ranks (see capi_check.h). One process per rank, started by
// mpirun (rt_capi_mpi_np*), as plain processes meeting at a rendezvous store (rt_capi_tcp_*),
// or alone (rt_capi_no_mpi). Prints CAPI-CHECK-OK once every check of this rank passed.
#include <stdlib.h>

#include <cstring>
#include <string>

#include "capi_check.h"

namespace korovod::capi_check {
namespace {

constexpr const char* kUsage = R"(usage: rt_capi_check [--expect-transport MPI|TCP] [--comm-ranks]
                     [--expect-init-error TEXT] [--help]

One rank of a job that checks korovod's C ABI: every collective, groups, DLPack outputs,
mismatch and duplicate-name errors, process sets, the join rule, and init -> shutdown -> init.
  --expect-transport T    the control plane init must pick (korovod_transport_name)
  --comm-ranks            also init on world ranks {0, size-1} only (MPI; Horovod's
                          init(comm=[...])): the other ranks must be told they are not part of it
  --expect-init-error T   only init, which must fail with a message containing T
Prints CAPI-CHECK-OK on success; exits 1 after printing each failed check.
)";

struct Args {
  std::string transport;
  bool comm_ranks = false;
  std::string init_error;
};

korovod_runtime* init(Checker& c, const korovod_init_options* options) {
  korovod_runtime* rt = nullptr;
  char err[1024] = "";
  const int rc = korovod_init_ex(&rt, options, err, sizeof err);
  c.check(rc == KOROVOD_OK && rt != nullptr, "init: code {} '{}'", rc, err);
  return rc == KOROVOD_OK ? rt : nullptr;
}

void check_identity(korovod_runtime* rt, Checker& c, const std::string& transport) {
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  c.check(rank >= 0 && rank < size && korovod_is_initialized(rt) == 1, "rank {} of {}", rank, size);
  c.check(korovod_local_rank(rt) == rank && korovod_local_size(rt) == size && korovod_cross_size(rt) == 1,
          "one host: local {}/{} cross size {}", korovod_local_rank(rt), korovod_local_size(rt),
          korovod_cross_size(rt));
  const std::string name = korovod_transport_name(rt);
  c.check(transport.empty() || name == transport, "transport {} (want {}), data planes {}", name, transport,
          korovod_backend_names(rt));
  if (name == "MPI") {
    c.check(korovod_mpi_enabled(rt) == 1 && korovod_launched_by_mpi() == 1 && korovod_mpi_built() == 1,
            "MPI queries");
    c.check(korovod_mpi_threads_supported() == 1, "MPI_THREAD_MULTIPLE");
  } else {
    c.check(korovod_mpi_enabled(rt) == 0, "mpi_enabled without MPI");
  }
}

// Horovod's init(comm=[0, size-1]): a world of those two ranks; the others are told they are not
// part of it.
void check_comm_ranks(Checker& c, int world_rank, int world_size) {
  const int32_t ranks[] = {0, world_size - 1};
  korovod_init_options o{};
  o.controller = KOROVOD_CONTROLLER_AUTO;
  o.comm_ranks = ranks;
  o.num_comm_ranks = 2;
  korovod_runtime* rt = nullptr;
  char err[1024] = "";
  const int rc = korovod_init_ex(&rt, &o, err, sizeof err);
  if (world_rank != 0 && world_rank != world_size - 1) {
    c.check(rc == KOROVOD_ERR_INVALID_ARGUMENT && std::strstr(err, "is not part of the communicator"),
            "comm ranks, outside: code {} '{}'", rc, err);
    return;
  }
  if (!c.check(rc == KOROVOD_OK, "comm ranks init: {}", err)) return;
  c.check(korovod_size(rt) == 2 && korovod_rank(rt) == (world_rank == 0 ? 0 : 1), "comm ranks world: {} of {}",
          korovod_rank(rt), korovod_size(rt));
  std::vector<float> x(3, static_cast<float>(world_rank + 1));
  Op op;
  op.name = "comm.ranks";
  op.input = x.data();
  op.shape = {3};
  Outcome out = run(rt, op);
  c.check(out.code == KOROVOD_OK && x[0] == static_cast<float>(1 + world_size), "comm ranks allreduce: {} {}", x[0],
          out.error);
  c.check(korovod_shutdown(rt) == KOROVOD_OK, "comm ranks shutdown");
  korovod_destroy(rt);
}

int run_checks(const Args& args) {
  Checker c(-1);
  if (!args.init_error.empty()) {
    korovod_runtime* rt = nullptr;
    char err[2048] = "";
    const int rc = korovod_init_ex(&rt, nullptr, err, sizeof err);
    c.check(rc != KOROVOD_OK && rt == nullptr && std::strstr(err, args.init_error.c_str()),
            "init should fail with '{}': code {} '{}'", args.init_error, rc, err);
    if (c.failures() == 0) fmt::print("CAPI-CHECK-OK init failed as expected: {}\n", err);
    return c.failures() == 0 ? 0 : 1;
  }
  // 1. Every operation, errors and the join rule.
  korovod_runtime* rt = init(c, nullptr);
  if (!rt) return 1;
  const int rank = korovod_rank(rt), size = korovod_size(rt);
  c.set_rank(rank);
  check_identity(rt, c, args.transport);
  check_allreduce(rt, c);
  check_allgather_broadcast_alltoall_reducescatter(rt, c);
  check_groups(rt, c);
  check_enqueue_many(rt, c);
  if (size > 1) {
    check_errors(rt, c);
    check_join_rule(rt, c);
  }
  std::vector<float> expect;
  void* kept = gather_for_later(rt, c, &expect);
  c.check(korovod_shutdown(rt) == KOROVOD_OK, "shutdown: {}", korovod_last_error(rt));
  korovod_destroy(rt);
  check_later(kept, expect, c);  // the output outlives the runtime

  // 2. Init again, now with static process sets (set 1 = {size-1}; set 2 = {0, size-1}).
  std::vector<int32_t> set_ranks = {size - 1}, set_sizes = {1};
  if (size >= 3) {
    set_ranks.insert(set_ranks.end(), {0, size - 1});
    set_sizes.push_back(2);
  }
  korovod_init_options with_sets{};
  with_sets.set_ranks = set_ranks.data();
  with_sets.set_sizes = set_sizes.data();
  with_sets.num_sets = size > 1 ? static_cast<int32_t>(set_sizes.size()) : 0;
  rt = init(c, &with_sets);
  if (!rt) return 1;
  check_identity(rt, c, args.transport);
  if (size > 1) check_process_sets(rt, c, with_sets.num_sets);
  check_allreduce(rt, c);
  c.check(korovod_shutdown(rt) == KOROVOD_OK, "second shutdown");
  korovod_destroy(rt);

  // 3. And once more, plain.
  rt = init(c, nullptr);
  if (!rt) return 1;
  check_allreduce(rt, c);
  c.check(korovod_shutdown(rt) == KOROVOD_OK, "third shutdown");
  korovod_destroy(rt);

  if (args.comm_ranks) check_comm_ranks(c, rank, size);
  if (c.failures() == 0) fmt::print("CAPI-CHECK-OK rank {} of {} ({})\n", rank, size, args.transport);
  return c.failures() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace korovod::capi_check

int main(int argc, char** argv) {
  using namespace korovod::capi_check;
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fmt::print("{}", kUsage);
      return 0;
    } else if (a == "--expect-transport" && i + 1 < argc) {
      args.transport = argv[++i];
    } else if (a == "--comm-ranks") {
      args.comm_ranks = true;
    } else if (a == "--expect-init-error" && i + 1 < argc) {
      args.init_error = argv[++i];
    } else {
      fmt::print(stderr, "rt_capi_check: unknown argument '{}'\n{}", a, kUsage);
      return 2;
    }
  }
  setenv("KOROVOD_DYNAMIC_PROCESS_SETS", "1", 0);  // check_process_sets adds and removes a set
  setenv("KOROVOD_LOG_LEVEL", "error", 0);          // the mismatch checks would log each error
  return run_checks(args);
}
