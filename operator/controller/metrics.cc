#include "controller/metrics.h"

#include <fmt/format.h>

namespace controller {
namespace {

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void scalar(std::string& out, const char* name, const char* type, const char* help, double v) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, v);
}

}  // namespace

void OperatorMetrics::set_job_info(const std::string& ns, const std::string& job,
                                   const std::string& launcher) {
  kube::MutexLock lock(mu_);
  job_info_[ns + "/" + job] = {launcher, ns};
}

void OperatorMetrics::remove_job_info(const std::string& ns, const std::string& job) {
  kube::MutexLock lock(mu_);
  job_info_.erase(ns + "/" + job);
}

void OperatorMetrics::set_job_progress(const std::string& ns, const std::string& job,
                                       const nlohmann::json& progress) {
  Progress p{ns, job, {}};
  for (const auto& [field, gauge] : {std::pair{"step", "step"}, {"totalSteps", "total_steps"},
                                     {"samplesPerSecond", "samples_per_second"}, {"loss", "loss"},
                                     {"etaSeconds", "eta_seconds"}}) {
    if (auto it = progress.find(field); it != progress.end() && it->is_number()) p.values[gauge] = it->get<double>();
  }
  kube::MutexLock lock(mu_);
  progress_[ns + "/" + job] = std::move(p);
}

void OperatorMetrics::remove_job_progress(const std::string& ns, const std::string& job) {
  kube::MutexLock lock(mu_);
  progress_.erase(ns + "/" + job);
}

void OperatorMetrics::observe_reconcile(std::chrono::nanoseconds d) {
  const double s = std::chrono::duration<double>(d).count();
  kube::MutexLock lock(mu_);
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (s <= kBuckets[i]) ++bucket_counts_[i];
  }
  ++reconcile_count_;
  reconcile_sum_ += s;
}

void OperatorMetrics::api_request(const std::string& verb) {
  kube::MutexLock lock(mu_);
  ++api_requests_[verb];
}

void OperatorMetrics::set_queue_depth(std::function<size_t()> depth) {
  kube::MutexLock lock(mu_);
  queue_depth_ = std::move(depth);
}

std::string OperatorMetrics::render() const {
  std::string out;
  scalar(out, "mpi_operator_jobs_created_total", "counter", "Counts number of MPI jobs created",
         static_cast<double>(created_));
  scalar(out, "mpi_operator_jobs_successful_total", "counter",
         "Counts number of MPI jobs successful", static_cast<double>(successful_));
  scalar(out, "mpi_operator_jobs_failed_total", "counter", "Counts number of MPI jobs failed",
         static_cast<double>(failed_));
  scalar(out, "mpi_operator_is_leader", "gauge", "Is this client the leader of this mpi-operator "
         "client set?", leader_ ? 1 : 0);
  out += fmt::format(
      "# HELP mpi_operator_reconcile_errors_total Reconciles that failed, by class: retryable "
      "(requeued with backoff) or permanent (retried when the MPIJob or an object it owns "
      "changes, or after 5 minutes)\n# TYPE mpi_operator_reconcile_errors_total counter\n"
      "mpi_operator_reconcile_errors_total{{class=\"permanent\"}} {}\n"
      "mpi_operator_reconcile_errors_total{{class=\"retryable\"}} {}\n",
      permanent_errors_.load(), retryable_errors_.load());
  kube::MutexLock lock(mu_);
  out += "# HELP mpi_operator_job_info Information about MPIJob\n"
         "# TYPE mpi_operator_job_info gauge\n";
  for (const auto& [key, info] : job_info_) {
    out += fmt::format("mpi_operator_job_info{{launcher=\"{}\",namespace=\"{}\"}} 1\n",
                       escape_label(info.first), escape_label(info.second));
  }
  out += "# HELP mpi_operator_reconcile_duration_seconds Time to reconcile one MPIJob\n"
         "# TYPE mpi_operator_reconcile_duration_seconds histogram\n";
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    out += fmt::format("mpi_operator_reconcile_duration_seconds_bucket{{le=\"{}\"}} {}\n",
                       kBuckets[i], bucket_counts_[i]);
  }
  out += fmt::format("mpi_operator_reconcile_duration_seconds_bucket{{le=\"+Inf\"}} {}\n",
                     reconcile_count_);
  out += fmt::format("mpi_operator_reconcile_duration_seconds_sum {}\n", reconcile_sum_);
  out += fmt::format("mpi_operator_reconcile_duration_seconds_count {}\n", reconcile_count_);
  out += "# HELP mpi_operator_api_requests_total API requests sent, by verb (a watch counts once)\n"
         "# TYPE mpi_operator_api_requests_total counter\n";
  for (const auto& [verb, n] : api_requests_) {
    out += fmt::format("mpi_operator_api_requests_total{{verb=\"{}\"}} {}\n", verb, n);
  }
  scalar(out, "mpi_operator_workqueue_depth", "gauge", "MPIJob keys waiting to be reconciled",
         queue_depth_ ? static_cast<double>(queue_depth_()) : 0);
  for (const auto& [gauge, help] : {std::pair{"step", "Training steps done (status.progress.step)"},
                                    {"total_steps", "Training steps in all (status.progress.totalSteps)"},
                                    {"samples_per_second", "Training samples per second over all ranks"},
                                    {"loss", "The last training loss rank 0 reported"},
                                    {"eta_seconds", "Seconds until the last step at the current rate"}}) {
    out += fmt::format("# HELP korovod_mpijob_progress_{} {}\n# TYPE korovod_mpijob_progress_{} gauge\n", gauge, help,
                       gauge);
    for (const auto& [key, p] : progress_) {
      auto it = p.values.find(gauge);
      if (it == p.values.end()) continue;
      out += fmt::format("korovod_mpijob_progress_{}{{namespace=\"{}\",mpijob=\"{}\"}} {}\n", gauge, escape_label(p.ns),
                         escape_label(p.job), it->second);
    }
  }
  return out;
}

}  // namespace controller
