// The operator's Prometheus metrics, rendered in the text exposition format for /metrics.
// Names follow Kubeflow's mpi-operator, plus reconcile latency and queue depth:
//
//   mpi_operator_jobs_created_total, mpi_operator_jobs_successful_total,
//   mpi_operator_jobs_failed_total                 counters
//   mpi_operator_job_info{launcher,namespace}      gauge (1 per MPIJob with a launcher)
//   mpi_operator_is_leader                         gauge
//   mpi_operator_reconcile_duration_seconds        histogram
//   mpi_operator_reconcile_errors_total{class}     counter: retryable (requeued with backoff)
//                                                  or permanent (retried on a change or after 5 min)
//   mpi_operator_workqueue_depth                   gauge (read from the queue at scrape time)
//   mpi_operator_api_requests_total{verb}          counter (CountingClient)
//   korovod_mpijob_progress_step{namespace,mpijob}, korovod_mpijob_progress_total_steps,
//   korovod_mpijob_progress_samples_per_second, korovod_mpijob_progress_loss,
//   korovod_mpijob_progress_eta_seconds            gauges: the status.progress of each running
//                                                  MPIJob that has one (progress_poller.h); a
//                                                  value the progress lacks is not served
//
// Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "kube/mutex.h"

namespace controller {

class OperatorMetrics {
 public:
  void jobs_created() { ++created_; }
  void jobs_successful() { ++successful_; }
  void jobs_failed() { ++failed_; }
  void reconcile_retryable_error() { ++retryable_errors_; }
  void reconcile_permanent_error() { ++permanent_errors_; }
  void set_leader(bool leader) { leader_ = leader; }
  // mpi_operator_api_requests_total{verb}: requests this process sent to the API server.
  void api_request(const std::string& verb);
  // mpi_operator_job_info{launcher=<launcher>, namespace=<ns>} = 1; keyed by ns/job.
  void set_job_info(const std::string& ns, const std::string& job, const std::string& launcher);
  void remove_job_info(const std::string& ns, const std::string& job);
  // The korovod_mpijob_progress_* gauges of ns/job from its status.progress; removed with
  // remove_job_progress (the job finished or is gone).
  void set_job_progress(const std::string& ns, const std::string& job, const nlohmann::json& progress);
  void remove_job_progress(const std::string& ns, const std::string& job);
  void observe_reconcile(std::chrono::nanoseconds d);
  // Evaluated at render time.
  void set_queue_depth(std::function<size_t()> depth);

  std::string render() const;

  uint64_t created() const { return created_; }
  uint64_t successful() const { return successful_; }
  uint64_t failed() const { return failed_; }
  uint64_t retryable_errors() const { return retryable_errors_; }
  uint64_t permanent_errors() const { return permanent_errors_; }

 private:
  static constexpr std::array<double, 12> kBuckets{0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                   0.25,  0.5,   1,    2.5,   5,    10};
  std::atomic<uint64_t> created_{0}, successful_{0}, failed_{0};
  std::atomic<uint64_t> retryable_errors_{0}, permanent_errors_{0};
  std::atomic<bool> leader_{false};

  mutable kube::Mutex mu_;
  std::map<std::string, std::pair<std::string, std::string>> job_info_ KOROVOD_GUARDED_BY(mu_);
  std::array<uint64_t, kBuckets.size()> bucket_counts_ KOROVOD_GUARDED_BY(mu_){};
  uint64_t reconcile_count_ KOROVOD_GUARDED_BY(mu_) = 0;
  double reconcile_sum_ KOROVOD_GUARDED_BY(mu_) = 0;
  std::function<size_t()> queue_depth_ KOROVOD_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> api_requests_ KOROVOD_GUARDED_BY(mu_);
  // ns/job -> (ns, job, gauge name suffix -> value)
  struct Progress {
    std::string ns, job;
    std::map<std::string, double> values;
  };
  std::map<std::string, Progress> progress_ KOROVOD_GUARDED_BY(mu_);
};

}  // namespace controller
