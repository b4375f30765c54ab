#include "kube/metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace kube {

void Counter::inc(double v) {
  if (v < 0) throw std::invalid_argument("a counter cannot decrease");
  value_.fetch_add(v);
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)),
      buckets_(new std::atomic<uint64_t>[bounds_.size()]) {
  if (!std::is_sorted(bounds_.begin(), bounds_.end()) ||
      std::adjacent_find(bounds_.begin(), bounds_.end()) != bounds_.end())
    throw std::invalid_argument("histogram bounds must be strictly increasing");
  for (size_t i = 0; i < bounds_.size(); ++i) buckets_[i] = 0;
}

void Histogram::observe(double v) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);  // first bound >= v
  if (it != bounds_.end()) buckets_[it - bounds_.begin()].fetch_add(1);
  count_.fetch_add(1);
  sum_.fetch_add(v);
}

std::vector<uint64_t> Histogram::cumulative_counts() const {
  std::vector<uint64_t> out(bounds_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) out[i] = running += buckets_[i].load();
  return out;
}

std::vector<double> default_buckets() {
  return {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10};
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  if (start <= 0 || factor <= 1 || count < 1)
    throw std::invalid_argument("exponential_buckets needs start > 0, factor > 1, count >= 1");
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

template <typename T>
Family<T>::Family(std::string name, std::string help, std::vector<std::string> label_names,
                  std::function<std::unique_ptr<T>()> make)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)),
      make_(std::move(make)) {}

template <typename T>
T& Family<T>::with(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names_.size())
    throw std::invalid_argument("metric " + name_ + " takes " +
                                std::to_string(label_names_.size()) + " label values");
  MutexLock lock(mu_);
  auto& child = children_[label_values];
  if (!child) child = make_();
  return *child;
}

template <typename T>
void Family<T>::for_each(
    const std::function<void(const std::vector<std::string>&, const T&)>& f) const {
  MutexLock lock(mu_);
  for (const auto& [values, child] : children_) f(values, *child);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

namespace {

bool valid_name(const std::string& n, bool allow_colon) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
  return std::all_of(n.begin(), n.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (allow_colon && c == ':');
  });
}

}  // namespace

MetricsRegistry::Entry& MetricsRegistry::entry(const std::string& name, Kind kind,
                                               const std::vector<std::string>& labels) {
  if (!valid_name(name, true)) throw std::invalid_argument("invalid metric name \"" + name + "\"");
  for (const auto& l : labels)
    if (!valid_name(l, false) || l.rfind("__", 0) == 0 || (kind == Kind::Histogram && l == "le"))
      throw std::invalid_argument("invalid label name \"" + l + "\" for " + name);
  auto [it, inserted] = entries_.try_emplace(name);
  if (!inserted && (it->second.kind != kind || it->second.labels != labels))
    throw std::invalid_argument("metric " + name + " already registered differently");
  it->second.kind = kind;
  it->second.labels = labels;
  return it->second;
}

Family<Counter>& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                          const std::vector<std::string>& labels) {
  MutexLock lock(mu_);
  Entry& e = entry(name, Kind::Counter, labels);
  if (!e.counter)
    e.counter = std::make_unique<Family<Counter>>(name, help, labels,
                                                  [] { return std::make_unique<Counter>(); });
  return *e.counter;
}

Family<Gauge>& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                                      const std::vector<std::string>& labels) {
  MutexLock lock(mu_);
  Entry& e = entry(name, Kind::Gauge, labels);
  if (!e.gauge)
    e.gauge = std::make_unique<Family<Gauge>>(name, help, labels,
                                              [] { return std::make_unique<Gauge>(); });
  return *e.gauge;
}

Family<Histogram>& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                              const std::vector<std::string>& labels,
                                              std::vector<double> bounds) {
  Histogram check(bounds);  // validate before registering
  MutexLock lock(mu_);
  Entry& e = entry(name, Kind::Histogram, labels);
  if (!e.histogram)
    e.histogram = std::make_unique<Family<Histogram>>(
        name, help, labels, [bounds] { return std::make_unique<Histogram>(bounds); });
  return *e.histogram;
}

void MetricsRegistry::gauge_callback(const std::string& name, const std::string& help,
                                     std::function<double()> read) {
  MutexLock lock(mu_);
  Entry& e = entry(name, Kind::Callback, {});
  e.help = help;
  e.read = std::move(read);
}

}  // namespace kube
