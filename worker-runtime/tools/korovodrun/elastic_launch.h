// korovodrun in elastic mode: hosts the job's store, runs the ElasticDriver against the real
// world (the discovery script, the store, worker processes started locally or over ssh) and
// forwards the workers' output. Each worker gets the elastic contract's environment
// (elastic_worker_env) and no fixed rank: it reads its place in the store every round.
#pragma once

#include <string>

#include "launch/discovery.h"
#include "launch/elastic_round.h"
#include "launch_options.h"
#include "rank_env.h"
#include "supervisor.h"

namespace korovod::launcher {

// The variables that make a process an elastic worker: KOROVOD_ELASTIC / HOROVOD_ELASTIC=1,
// KOROVOD_ELASTIC_WORKER_ID=<host>:<slot>, KOROVOD_HOSTNAME / HOROVOD_HOSTNAME / KOROVOD_HOST_ID
// = host, the store (KOROVOD_RENDEZVOUS_ADDR/_PORT, KOROVOD_RENDEZVOUS_SERVER=external),
// KOROVOD_ELASTIC_TIMEOUT / HOROVOD_ELASTIC_TIMEOUT, PYTHONUNBUFFERED=1.
EnvMap elastic_worker_env(const WorkerSlot& worker, const Rendezvous& rendezvous, int elastic_timeout_seconds);

// -H / --hostfile as discovery that never changes (horovodrun's FixedHosts).
class FixedDiscovery : public HostDiscovery {
 public:
  explicit FixedDiscovery(std::vector<HostSlots> hosts) : hosts_(std::move(hosts)) {}
  Result<std::vector<HostSlots>> discover() override { return hosts_; }

 private:
  std::vector<HostSlots> hosts_;
};

// --elastic-timeout, else HOROVOD_ELASTIC_TIMEOUT (KOROVOD_ELASTIC_TIMEOUT first), else 600.
int elastic_timeout_seconds(const LaunchOptions& options, const EnvMap& caller_env);

// The whole elastic job; returns korovodrun's exit code (see ElasticDriver; 128 + signal when
// korovodrun was told to stop). Expects the job signals blocked (JobSignalBlock).
int run_elastic_job(const LaunchOptions& options, const EnvMap& caller_env, OutputSink& sink,
                    const SupervisorOptions& supervision, GroupWatcher* watcher);

}  // namespace korovod::launcher
