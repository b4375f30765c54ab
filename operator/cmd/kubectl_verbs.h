// The command line of `kubectl korovod` (the korovod binary installed as kubectl-korovod) and of
// `korovod submit|get|logs|delete|top`: kubectl's flags and conventions (--kubeconfig,
// --context, -n, -A, -o), then operator/cli's verbs (cli/commands.h).
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "cli/submit.h"

namespace operator_cmd {

struct KubectlCommandLine {
  std::string kubeconfig, context, ns, output;
  bool all_namespaces = false;
  CLI::App *submit = nullptr, *get = nullptr, *logs = nullptr, *remove = nullptr, *top = nullptr;

  // submit
  cli::SubmitRequest request;
  std::optional<int> processes_per_worker;
  std::string elastic, mpi = "openmpi", dry_run;
  bool follow = false;
  // get, logs, delete
  std::optional<std::string> name;
  std::string job;
  std::optional<int> rank;
};

void add_kubectl_verbs(CLI::App& app, KubectlCommandLine& c);

// Runs the verb the command line chose; nullopt when it chose none of them.
std::optional<int> run_kubectl_verb(KubectlCommandLine& c, const std::atomic<bool>& interrupted);

}  // namespace operator_cmd
