#include "cli/job_view.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <sstream>

#include "mpijob/progress.h"
#include "mpijob/types.h"

namespace cli {
namespace {

using kube::Object;

std::string text_of(const Object& o, const std::string& pointer, const std::string& fallback = "") {
  const Object::json_pointer p(pointer);
  if (!o.contains(p)) return fallback;
  const Object& v = o.at(p);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// STEP SAMPLES/S LOSS ETA from status.progress (docs/progress.md), "-" where unknown.
std::vector<std::string> progress_cells(const Object& job) {
  const Object p = job.value("/status/progress"_json_pointer, Object::object());
  auto number = [&](const char* key, const char* format) {
    auto it = p.find(key);
    if (it == p.end() || !it->is_number()) return std::string("-");
    char buf[32];
    std::snprintf(buf, sizeof buf, format, it->get<double>());
    return std::string(buf);
  };
  return {number("step", "%.0f"), number("samplesPerSecond", "%.1f"), number("loss", "%.4f"), p.value("eta", "-")};
}

std::string age(const Object& value, Clock::time_point now) {
  const auto t = parse_time(value);
  if (!t) return "-";
  return human_duration(std::chrono::duration_cast<std::chrono::seconds>(std::max(now - *t, Clock::duration::zero())));
}

// Why a worker pod failed, "" when it did not: the pod's phase Failed, or a container that
// ended with a nonzero code (now or before its last restart).
std::string failure_of(const Object& pod) {
  const std::string phase = text_of(pod, "/status/phase");
  for (const Object& cs : pod.value("/status/containerStatuses"_json_pointer, Object::array())) {
    for (const char* state : {"/state/terminated", "/lastState/terminated"}) {
      const Object::json_pointer p(state);
      if (!cs.contains(p) || cs.at(p).value("exitCode", 0) == 0) continue;
      const Object& t = cs.at(p);
      std::string why = t.value("reason", std::string("Error")) + ", exit code " + std::to_string(t.value("exitCode", 0));
      if (const std::string m = t.value("message", std::string()); !m.empty()) why += ": " + m;
      return why + (std::string(state) == "/lastState/terminated" ? " (before its last restart)" : "");
    }
  }
  if (phase == "Failed") return text_of(pod, "/status/reason", "Failed") + ": " + text_of(pod, "/status/message");
  return "";
}

}  // namespace

std::string job_state(const Object& job) {
  const Object::json_pointer p("/status/conditions");
  if (!job.contains(p) || !job.at(p).is_array() || job.at(p).empty()) return "";
  return text_of(job.at(p).back(), "/type");
}

std::string human_duration(std::chrono::seconds d) {
  const long s = d.count();
  const long m = s / 60, h = s / 3600, days = h / 24;
  if (s < 120) return std::to_string(s) + "s";
  if (m < 10) return std::to_string(m) + "m" + (s % 60 ? std::to_string(s % 60) + "s" : "");
  if (m < 180) return std::to_string(m) + "m";
  if (h < 8) return std::to_string(h) + "h" + (m % 60 ? std::to_string(m % 60) + "m" : "");
  if (h < 48) return std::to_string(h) + "h";
  if (h < 24 * 8) return std::to_string(days) + "d" + (h % 24 ? std::to_string(h % 24) + "h" : "");
  if (days < 365 * 2) return std::to_string(days) + "d";
  return std::to_string(days / 365) + "y";
}

std::optional<Clock::time_point> parse_time(const Object& value) {
  if (!value.is_string()) return std::nullopt;
  std::tm tm{};
  std::istringstream in(value.get<std::string>());
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  return Clock::from_time_t(timegm(&tm));
}

std::vector<std::string> job_columns(bool with_namespace) {
  std::vector<std::string> c = {"NAME", "STATE", "WORKERS", "READY", "RESTARTS", "STEP", "SAMPLES/S", "LOSS", "ETA", "AGE"};
  if (with_namespace) c.insert(c.begin(), "NAMESPACE");
  return c;
}

std::vector<std::string> job_row(const Object& job, Clock::time_point now, bool with_namespace) {
  std::vector<std::string> r = {text_of(job, "/metadata/name"), job_state(job),
                                text_of(job, "/spec/mpiReplicaSpecs/Worker/replicas", "0"),
                                text_of(job, "/status/readyWorkers", "0"), text_of(job, "/status/restartCount", "0")};
  for (auto& cell : progress_cells(job)) r.push_back(std::move(cell));
  r.push_back(age(job.value("/metadata/creationTimestamp"_json_pointer, Object()), now));
  if (with_namespace) r.insert(r.begin(), text_of(job, "/metadata/namespace"));
  return r;
}

std::vector<std::string> top_columns() {
  return {"NAMESPACE", "NAME", "STATE", "WORKERS", "READY", "RESTARTS", "STEP", "SAMPLES/S", "LOSS", "ETA", "RUNNING"};
}

std::vector<std::string> top_row(const Object& job, Clock::time_point now) {
  std::vector<std::string> r = job_row(job, now, true);
  r.back() = age(job.value("/status/startTime"_json_pointer, Object()), now);
  return r;
}

bool job_running(const Object& job) {
  const mpijob::JobStatus s = mpijob::status_from_json(job.value("status", Object::object()));
  return !s.has_true("Succeeded") && !s.has_true("Failed");
}

std::string render_table(const std::vector<std::string>& columns, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) width[i] = columns[i].size();
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t i = 0; i < cells.size(); ++i) {
      text += cells[i];
      if (i + 1 < cells.size()) text += std::string(width[i] - cells[i].size() + 3, ' ');
    }
    out << text << "\n";
  };
  line(columns);
  for (const auto& row : rows) line(row);
  return out.str();
}

std::string describe_job(const Object& job, const std::vector<Object>& pods, Clock::time_point now) {
  std::ostringstream out;
  const std::string state = job_state(job);
  out << "Name:        " << text_of(job, "/metadata/name") << "\n"
      << "Namespace:   " << text_of(job, "/metadata/namespace") << "\n"
      << "State:       " << (state.empty() ? "-" : state) << "\n"
      << "Workers:     " << text_of(job, "/status/readyWorkers", "0") << " ready of "
      << text_of(job, "/spec/mpiReplicaSpecs/Worker/replicas", "0") << "\n"
      << "Restarts:    " << text_of(job, "/status/restartCount", "0") << "\n"
      << "Age:         " << age(job.value("/metadata/creationTimestamp"_json_pointer, Object()), now) << "\n";
  if (const std::string p = mpijob::progress_summary(job.value("/status/progress"_json_pointer, Object()));
      !p.empty()) {
    out << "Progress:    " << p << "\n";
  }
  if (job.contains("/status/startTime"_json_pointer)) out << "Started:     " << text_of(job, "/status/startTime") << "\n";
  if (job.contains("/status/completionTime"_json_pointer)) {
    out << "Completed:   " << text_of(job, "/status/completionTime") << "\n";
  }
  out << "Conditions:\n";
  for (const Object& c : job.value("/status/conditions"_json_pointer, Object::array())) {
    out << "  " << text_of(c, "/type") << "=" << text_of(c, "/status") << "  " << text_of(c, "/reason") << ": "
        << text_of(c, "/message") << "\n";
  }
  std::vector<std::string> failed;
  for (const Object& pod : pods) {
    if (text_of(pod, "/metadata/labels/" + std::string("training.kubeflow.org~1job-role")) != "worker") continue;
    if (const std::string why = failure_of(pod); !why.empty()) failed.push_back(text_of(pod, "/metadata/name") + ": " + why);
  }
  if (!failed.empty()) {
    std::sort(failed.begin(), failed.end());
    out << "Failed workers:\n";
    for (const std::string& f : failed) out << "  " << f << "\n";
  }
  return out.str();
}

}  // namespace cli
