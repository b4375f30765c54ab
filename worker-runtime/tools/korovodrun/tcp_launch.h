// korovodrun's default path (--tcp; horovodrun --gloo): korovodrun hosts the rendezvous store
// itself, starts every rank (locally or over ssh) and supervises them to the end.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "launch/hosts.h"
#include "korovod/config.h"
#include "launch_options.h"
#include "line_prefixer.h"
#include "rank_env.h"
#include "supervisor.h"

namespace korovod::launcher {

// The hosts of a job: -H, else the hostfile's, else localhost with -np slots (horovodrun).
Result<std::vector<HostSlots>> hosts_from_options(const LaunchOptions& options);

struct RankPlanInputs {
  EnvMap caller_env;               // korovodrun's own environment
  std::string cwd;                 // remote ranks cd here first, as horovodrun's do
  std::set<std::string> remote_hosts;
  Rendezvous rendezvous;
  int grace_seconds = 5;           // for the remote wrapper
  // This run's secret: in a local rank's environment (KOROVOD_JOB_SECRET), on the first line of a
  // remote rank's ssh stdin (remote_command.h); never on a command line. "" = none.
  std::string job_secret;
};

// One RankLaunch per slot: the caller's environment with tuning_env() and slot_env() on top; a
// local slot runs the command itself, a remote one `ssh host <wrapper>` with that environment
// on the remote command line (the job secret apart: see RankPlanInputs).
std::vector<RankLaunch> plan_ranks(const LaunchOptions& options, const std::vector<SlotAssignment>& slots,
                                   const RankPlanInputs& inputs);

// The whole job; returns korovodrun's exit code. A fresh job secret per run: the store takes
// only connections that prove it (refused ones are reported on stderr with their address). Errors before any rank starts are reported on
// `sink` and give 1. Expects the job signals blocked (JobSignalBlock). `watcher`: see supervise().
int run_tcp_job(const LaunchOptions& options, const EnvMap& caller_env, OutputSink& sink,
                const SupervisorOptions& supervision, GroupWatcher* watcher);

}  // namespace korovod::launcher
