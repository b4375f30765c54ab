// An elastic worker on the real runtime, through the C ABI as Python's korovod.torch uses it
// (korovodrun_elastic_runtime.sh): korovod_init joins the driver's round, then it runs checked
// allreduces until the round ends, resets (korovod_shutdown + korovod_init) and goes on:
//  - every step allreduces (sum) two tensors whose exact sums depend on the round's size and the
//    step, at least one step per round; a wrong element prints WRONG and exits 3;
//  - rank 0 reads the driver's newest round (korovod_elastic_published_round) and whether
//    DONE_FILE exists, and broadcasts both, so every rank decides alike (as Python's
//    check_host_updates): a newer round -> reset; DONE_FILE -> exit 0;
//  - a failed operation (a lost peer) -> reset into the driver's next round;
//  - an init that says the driver removed it -> exit 1 (korovodrun does not count it as a failure).
// Lines (stdout): "worker ID pid P round R rank r size S", "worker ID round R size S: first
// allreduce correct", "worker ID round R size S: N allreduces correct, leaving (...)".
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "korovod/c_api.h"

namespace {

struct Worker {
  std::string id;
  std::string done_file;
  korovod_runtime* rt = nullptr;
  int64_t round = 0;
  int rank = 0, size = 0;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Waits for an op; its error text (empty when it succeeded).
std::string finish(korovod_runtime* rt, int64_t handle) {
  if (handle < 0) return fmt::format("enqueue failed ({}): {}", handle, korovod_last_error(rt));
  const int code = korovod_wait(rt, handle);
  std::string error = code == KOROVOD_OK ? "" : fmt::format("code {}: {}", code, korovod_handle_error(rt, handle));
  korovod_release(rt, handle);
  return error;
}

float input_value(int rank, size_t i, int64_t step) { return static_cast<float>((rank + 1) * (1 + i % 5) + step % 3); }

float expected_sum(int size, size_t i, int64_t step) {
  return static_cast<float>((1 + i % 5) * size * (size + 1) / 2 + size * (step % 3));
}

// One step: allreduces two tensors (a small one and one of 256 KiB) and checks every element.
// Returns the error of a failed op; exits on a wrong result.
std::string checked_step(Worker& w, int64_t step) {
  static const size_t kLengths[] = {1000, 65536};
  for (size_t length : kLengths) {
    std::vector<float> data(length);
    for (size_t i = 0; i < length; ++i) data[i] = input_value(w.rank, i, step);
    const int64_t shape[] = {static_cast<int64_t>(length)};
    const korovod_tensor t{data.data(), KOROVOD_FLOAT32, 1, shape, -1};
    const std::string name = fmt::format("step.{}", length);
    std::string error = finish(w.rt, korovod_allreduce(w.rt, name.c_str(), &t, &t, KOROVOD_SUM, 1.0, 1.0, 0));
    if (!error.empty()) return error;
    for (size_t i = 0; i < length; ++i) {
      if (data[i] != expected_sum(w.size, i, step)) {
        fmt::print("WRONG: worker {} round {} size {} step {} tensor {} element {}: {} instead of {}\n", w.id, w.round,
                   w.size, step, length, i, data[i], expected_sum(w.size, i, step));
        std::exit(3);
      }
    }
  }
  return "";
}

// Rank 0's view, broadcast: {newest published round, 1 if DONE_FILE exists}.
std::string agree(Worker& w, int64_t control[2]) {
  if (w.rank == 0) {
    uint64_t published = 0;
    char text[512] = {};
    if (korovod_elastic_published_round(&published, text, sizeof text) != KOROVOD_OK) {
      return fmt::format("korovod_elastic_published_round: {}", text);
    }
    control[0] = static_cast<int64_t>(published);
    control[1] = access(w.done_file.c_str(), F_OK) == 0 ? 1 : 0;
  }
  const int64_t shape[] = {2};
  const korovod_tensor t{control, KOROVOD_INT64, 1, shape, -1};
  return finish(w.rt, korovod_broadcast(w.rt, "control", &t, 0, 0));
}

enum class RoundEnd { kNewRound, kLostPeer, kDone };

// Every round runs at least one checked step before it honours a newer round, so each round
// the driver formed is checked even when the next one is published at once.
RoundEnd train_round(Worker& w) {
  for (int64_t step = 0;; ++step) {
    int64_t control[2] = {0, 0};
    std::string error = checked_step(w, step);
    if (error.empty()) {
      if (step == 0) fmt::print("worker {} round {} size {}: first allreduce correct\n", w.id, w.round, w.size);
      error = agree(w, control);
    }
    const int64_t correct = error.empty() ? step + 1 : step;
    if (!error.empty()) {
      fmt::print("worker {} round {} size {}: {} allreduces correct, leaving (lost a peer: {})\n", w.id, w.round,
                 w.size, correct, error);
      return RoundEnd::kLostPeer;
    }
    if (control[1] == 1) {
      fmt::print("worker {} round {} size {}: {} allreduces correct, leaving (done)\n", w.id, w.round, w.size, correct);
      return RoundEnd::kDone;
    }
    if (control[0] > w.round) {
      fmt::print("worker {} round {} size {}: {} allreduces correct, leaving (round {} published)\n", w.id, w.round,
                 w.size, correct, control[0]);
      return RoundEnd::kNewRound;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help") {
    fmt::print("usage: elastic_allreduce_worker DONE_FILE (started by korovodrun in elastic mode; see the top of "
               "elastic_allreduce_worker.cc)\n");
    return argc == 2 ? 0 : 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);  // a pipe to korovodrun: each line as printed
  Worker w{env("KOROVOD_ELASTIC_WORKER_ID"), argv[1]};
  if (!korovod_elastic_enabled() || w.id.empty()) {
    fmt::print(stderr, "not an elastic worker (KOROVOD_ELASTIC, KOROVOD_ELASTIC_WORKER_ID)\n");
    return 2;
  }
  int failed_inits = 0;
  for (;;) {
    char text[1024] = {};
    const int code = korovod_init(&w.rt, nullptr, nullptr, nullptr, 0, text, sizeof text);
    if (code == KOROVOD_ERR_PRECONDITION) {
      fmt::print("worker {} pid {} removed: {}\n", w.id, getpid(), text);
      return 1;
    }
    if (code != KOROVOD_OK) {  // a member missing at the rendezvous: the driver's next round
      fmt::print("worker {} init failed ({}): {}\n", w.id, code, text);
      if (++failed_inits == 3) return 4;
      continue;
    }
    failed_inits = 0;
    w.round = korovod_elastic_round(w.rt);
    w.rank = korovod_rank(w.rt);
    w.size = korovod_size(w.rt);
    fmt::print("worker {} pid {} round {} rank {} size {}\n", w.id, getpid(), w.round, w.rank, w.size);
    const RoundEnd end = train_round(w);
    korovod_destroy(w.rt);  // shuts down: the reset
    w.rt = nullptr;
    if (end == RoundEnd::kDone) return 0;
  }
}
