#include "mpijob/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace mpijob {
namespace {

std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* format, ...) {
  char buf[128];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return n < 0 ? std::string() : std::string(buf, std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
}

bool finite_number(const kube::Object& v) { return v.is_number() && std::isfinite(v.get<double>()); }

// Six significant digits: what a column can show (a loss of 0.005235182121396065 reads 0.00523518).
double rounded(double v) { return std::strtod(printf_string("%.6g", v).c_str(), nullptr); }

// Copies line[from] to out[to] when it is a finite number (non-negative where asked).
void copy_number(const kube::Object& line, const char* from, kube::Object& out, const char* to,
                 bool non_negative = true) {
  auto it = line.find(from);
  if (it == line.end() || !finite_number(*it)) return;
  if (non_negative && it->get<double>() < 0) return;
  out[to] = rounded(it->get<double>());
}

void copy_count(const kube::Object& line, const char* from, kube::Object& out, const char* to) {
  auto it = line.find(from);
  if (it == line.end() || !it->is_number_integer() || it->get<int64_t>() < 0) return;
  out[to] = it->get<int64_t>();
}

void copy_short_string(const kube::Object& line, const char* from, kube::Object& out, const char* to) {
  auto it = line.find(from);
  if (it == line.end() || !it->is_string() || it->get_ref<const std::string&>().size() > 64) return;
  out[to] = *it;
}

std::string trim_number(double v) {
  if (std::fabs(v) >= 100) return printf_string("%.0f", v);
  if (std::fabs(v) >= 1) return printf_string("%.2f", v);
  return printf_string("%.4f", v);
}

}  // namespace

std::optional<kube::Object> last_progress_line(std::string_view log) {
  size_t end = log.size();
  while (end > 0) {
    size_t start = log.rfind('\n', end - 1);
    start = start == std::string_view::npos ? 0 : start + 1;
    std::string_view line = log.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (const size_t at = line.find(kProgressMarker); at != std::string_view::npos) {
      kube::Object parsed = kube::Object::parse(line.substr(at + kProgressMarker.size()), nullptr, false);
      if (parsed.is_object()) return parsed;
    }
    if (start == 0) break;
    end = start - 1;
  }
  return std::nullopt;
}

std::optional<kube::Object> progress_status(const kube::Object& line, const std::string& launcher_pod,
                                            int64_t launcher_restarts) {
  kube::Object out = kube::Object::object();
  copy_count(line, "step", out, "step");
  if (!out.contains("step")) return std::nullopt;
  copy_count(line, "total_steps", out, "totalSteps");
  copy_number(line, "steps_per_second", out, "stepsPerSecond");
  copy_number(line, "samples_per_second", out, "samplesPerSecond");
  copy_number(line, "loss", out, "loss", /*non_negative=*/false);
  copy_number(line, "elapsed_seconds", out, "elapsedSeconds");
  copy_number(line, "eta_seconds", out, "etaSeconds");
  copy_short_string(line, "last_step_time", out, "lastStepTime");
  copy_short_string(line, "source", out, "source");
  if (out.contains("etaSeconds")) out["eta"] = format_eta(out["etaSeconds"].get<double>());
  if (auto it = line.find("metrics"); it != line.end() && it->is_object()) {
    kube::Object metrics = kube::Object::object();
    for (const auto& [name, value] : it->items()) {
      if (metrics.size() == kMaxMetrics) break;
      if (name.empty() || name.size() > kMaxMetricName || !finite_number(value)) continue;
      metrics[name] = rounded(value.get<double>());
    }
    if (!metrics.empty()) out["metrics"] = std::move(metrics);
  }
  out["launcherPod"] = launcher_pod;
  if (launcher_restarts > 0) out["launcherRestarts"] = launcher_restarts;
  return out;
}

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 1) return "0s";
  auto s = static_cast<int64_t>(std::llround(seconds));
  const int64_t h = s / 3600, m = (s % 3600) / 60;
  s %= 60;
  if (h > 0) return printf_string("%lldh%lldm%llds", static_cast<long long>(h), static_cast<long long>(m),
                                  static_cast<long long>(s));
  if (m > 0) return printf_string("%lldm%llds", static_cast<long long>(m), static_cast<long long>(s));
  return printf_string("%llds", static_cast<long long>(s));
}

std::string progress_summary(const kube::Object& progress) {
  if (!progress.is_object() || !progress.contains("step")) return "";
  const int64_t step = progress["step"].get<int64_t>();
  std::string out = "step " + std::to_string(step);
  if (auto total = progress.find("totalSteps"); total != progress.end() && total->get<int64_t>() > 0) {
    const int64_t t = total->get<int64_t>();
    out += "/" + std::to_string(t) + " (" + std::to_string(std::min<int64_t>(100, step * 100 / t)) + "%)";
  }
  if (auto sps = progress.find("samplesPerSecond"); sps != progress.end()) {
    out += ", " + trim_number(sps->get<double>()) + " samples/s";
  } else if (auto steps = progress.find("stepsPerSecond"); steps != progress.end()) {
    out += ", " + trim_number(steps->get<double>()) + " steps/s";
  }
  if (auto loss = progress.find("loss"); loss != progress.end()) out += printf_string(", loss %.4f", loss->get<double>());
  if (auto metrics = progress.find("metrics"); metrics != progress.end()) {
    for (const auto& [name, value] : metrics->items()) out += ", " + name + " " + trim_number(value.get<double>());
  }
  if (auto eta = progress.find("eta"); eta != progress.end()) out += ", ETA " + eta->get<std::string>();
  return out;
}

}  // namespace mpijob
