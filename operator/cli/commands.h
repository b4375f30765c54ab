// The verbs of `kubectl korovod` (also `korovod submit|get|logs|delete|top`): each takes the
// API (a kube::Client), where pod logs come from (PodLogs) and the output streams, and returns
// the process's exit code. The command line and the kubeconfig are cmd/korovod_main.cc's.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "cli/submit.h"
#include "kube/client.h"
#include "kube/clock.h"
#include "kube/rest_client.h"

namespace cli {

// A pod's log: what it has written so far, or followed as it writes.
class PodLogs {
 public:
  virtual ~PodLogs() = default;
  virtual std::string read(const std::string& ns, const std::string& pod, const std::string& container) = 0;
  virtual std::unique_ptr<kube::LineStream> follow(const std::string& ns, const std::string& pod,
                                                   const std::string& container) = 0;
};

// Through the API server (GET .../pods/<pod>/log).
class RestPodLogs final : public PodLogs {
 public:
  explicit RestPodLogs(kube::RestClient& client) : client_(client) {}
  std::string read(const std::string& ns, const std::string& pod, const std::string& container) override;
  std::unique_ptr<kube::LineStream> follow(const std::string& ns, const std::string& pod,
                                           const std::string& container) override;

 private:
  kube::RestClient& client_;
};

struct Io {
  std::ostream& out;
  std::ostream& err;
};

enum class Output { kTable, kYaml, kJson, kName };
// "", "yaml", "json", "name" (kubectl's -o). Throws std::invalid_argument naming -o.
Output parse_output(const std::string& text);

struct SubmitOptions {
  bool dry_run = false;  // print the MPIJob (print_dry_run), create nothing
  Output output = Output::kTable;
  bool follow = false;
};

struct FollowOptions {
  std::chrono::milliseconds poll{1000};  // how often the job's state is read while following
  std::chrono::seconds launcher_wait{600};  // how long to wait for the launcher pod to start
};

// The MPIJob as --dry-run=client prints it (-o yaml, the default, json or name).
void print_dry_run(const SubmitRequest& request, Output output, std::ostream& out);

// Builds and creates the MPIJob ("mpijob.kubeflow.org/NAME created"); with dry_run prints it
// (-o yaml | json; the table form prints YAML too). With follow, then follows it (follow_job).
int submit(kube::Client& api, PodLogs& logs, kube::Clock& clock, const SubmitRequest& request,
           const SubmitOptions& options, const std::atomic<bool>& interrupted, Io io);

// Streams the launcher's log with the job's state changes between, until the job Succeeded (0)
// or Failed (1). Ctrl-C (interrupted) stops following, leaves the job running, says how to
// delete it, and returns 130.
int follow_job(kube::Client& api, PodLogs& logs, kube::Clock& clock, const std::string& ns, const std::string& name,
               const FollowOptions& options, const std::atomic<bool>& interrupted, Io io);

// One job described (with NAME) or the jobs of `ns` ("" = every namespace) as a table; -o yaml,
// json or name prints the objects instead.
int get(kube::Client& api, const std::string& ns, const std::optional<std::string>& name, Output output,
        Io io);
// The jobs that have not finished, with their running time, in `ns` ("" = every namespace).
int top(kube::Client& api, const std::string& ns, Io io);
int remove_job(kube::Client& api, const std::string& ns, const std::string& name, Io io);
// The launcher's log (its newest pod; one not started yet has none, and a note says so); with
// `rank`, only the lines the launcher tagged with that rank (mpirun --tag-output
// "[1,R]<stdout>:", -prepend-rank "[R] ", korovodrun "[R]<stdout>:"). NotFound (1) when the
// MPIJob does not exist.
int logs(kube::Client& api, PodLogs& logs, const std::string& ns, const std::string& name, std::optional<int> rank,
         bool follow, const std::atomic<bool>& interrupted, Io io);

// Whether `line` is one the launcher tagged with `rank`.
bool line_of_rank(const std::string& line, int rank);

}  // namespace cli
