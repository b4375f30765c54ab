// A small metrics registry rendering the Prometheus text exposition format 0.0.4
// (the HTTP server serves render() on /metrics).
//
//   MetricsRegistry reg;
//   auto& reconciles = reg.counter("korovod_reconcile_total", "Reconciles.", {"result"});
//   reconciles.with({"success"}).inc();
//   auto& depth = reg.gauge("korovod_workqueue_depth", "Queue depth.", {"name"});
//   auto& took = reg.histogram("korovod_reconcile_seconds", "Time.", {}, default_buckets());
//   took.with({}).observe(0.2);
//
// Families and their children live as long as the registry; references stay valid. Updating
// a child is lock-free; creating one or rendering takes the family's mutex.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kube/mutex.h"

namespace kube {

class Counter {
 public:
  void inc(double v = 1.0);  // v must be >= 0 (std::invalid_argument otherwise)
  double value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v); }
  void inc(double v = 1.0) { value_.fetch_add(v); }
  void dec(double v = 1.0) { value_.fetch_sub(v); }
  double value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // sorted, +Inf implied
  void observe(double v);
  uint64_t count() const { return count_.load(); }
  double sum() const { return sum_.load(); }
  // Cumulative counts per upper bound (the +Inf bucket is count()).
  std::vector<uint64_t> cumulative_counts() const;
  const std::vector<double>& upper_bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // non-cumulative, one per bound
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// Prometheus client defaults: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10.
std::vector<double> default_buckets();
// start, start*factor, ... (count bounds).
std::vector<double> exponential_buckets(double start, double factor, int count);

// One metric name with a fixed set of label names; a child per label-value combination.
template <typename T>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::function<std::unique_ptr<T>()> make);
  // The child for these label values (created on first use). Wrong arity: invalid_argument.
  T& with(const std::vector<std::string>& label_values);
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Calls f(label_values, child) for each child, in label order, under the family's lock.
  void for_each(const std::function<void(const std::vector<std::string>&, const T&)>& f) const;

 private:
  const std::string name_, help_;
  const std::vector<std::string> label_names_;
  const std::function<std::unique_ptr<T>()> make_;
  mutable Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_ KOROVOD_GUARDED_BY(mu_);
};

class MetricsRegistry {
 public:
  // Registering a name twice returns the existing family when the kind and labels match,
  // and throws std::invalid_argument otherwise (as do invalid metric or label names).
  Family<Counter>& counter(const std::string& name, const std::string& help,
                           const std::vector<std::string>& labels = {});
  Family<Gauge>& gauge(const std::string& name, const std::string& help,
                       const std::vector<std::string>& labels = {});
  Family<Histogram>& histogram(const std::string& name, const std::string& help,
                               const std::vector<std::string>& labels,
                               std::vector<double> upper_bounds = default_buckets());
  // A gauge read at render time (e.g. a work queue's len()).
  void gauge_callback(const std::string& name, const std::string& help,
                      std::function<double()> read);

  std::string render() const;  // text format 0.0.4
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  enum class Kind { Counter, Gauge, Histogram, Callback };
  struct Entry {
    Kind kind;
    std::vector<std::string> labels;
    std::unique_ptr<Family<Counter>> counter;
    std::unique_ptr<Family<Gauge>> gauge;
    std::unique_ptr<Family<Histogram>> histogram;
    std::string help;
    std::function<double()> read;
  };
  Entry& entry(const std::string& name, Kind kind, const std::vector<std::string>& labels) KOROVOD_REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<std::string, Entry> entries_ KOROVOD_GUARDED_BY(mu_);  // by name, rendered in name order
};

}  // namespace kube
