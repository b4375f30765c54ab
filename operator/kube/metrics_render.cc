// Rendering of MetricsRegistry in the Prometheus text exposition format 0.0.4.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "kube/metrics.h"

namespace kube {

namespace {

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  // The shortest form that reads back exactly, as Go's Prometheus client writes floats.
  char buf[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string escape(const std::string& s, bool quote) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (quote && c == '"') out += "\\\"";
    else out += c;
  }
  return out;
}

std::string label_set(const std::vector<std::string>& names,
                      const std::vector<std::string>& values, const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (out.empty() ? "" : ",") + names[i] + "=\"" + escape(values[i], true) + "\"";
  if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
  return out.empty() ? "" : "{" + out + "}";
}

void header(std::string& out, const std::string& name, const std::string& help,
            const char* type) {
  out += "# HELP " + name + " " + escape(help, false) + "\n";
  out += "# TYPE " + name + " " + type + "\n";
}

template <typename T>
void render_simple(std::string& out, const Family<T>& f, const char* type) {
  header(out, f.name(), f.help(), type);
  f.for_each([&](const std::vector<std::string>& values, const T& m) {
    out += f.name() + label_set(f.label_names(), values) + " " + number(m.value()) + "\n";
  });
}

void render_histogram(std::string& out, const Family<Histogram>& f) {
  header(out, f.name(), f.help(), "histogram");
  f.for_each([&](const std::vector<std::string>& values, const Histogram& h) {
    const auto counts = h.cumulative_counts();
    const auto& bounds = h.upper_bounds();
    for (size_t i = 0; i < bounds.size(); ++i)
      out += f.name() + "_bucket" +
             label_set(f.label_names(), values, "le=\"" + number(bounds[i]) + "\"") + " " +
             std::to_string(counts[i]) + "\n";
    const std::string total = std::to_string(h.count());
    out += f.name() + "_bucket" + label_set(f.label_names(), values, "le=\"+Inf\"") + " " +
           total + "\n";
    out += f.name() + "_sum" + label_set(f.label_names(), values) + " " + number(h.sum()) + "\n";
    out += f.name() + "_count" + label_set(f.label_names(), values) + " " + total + "\n";
  });
}

}  // namespace

std::string MetricsRegistry::render() const {
  MutexLock lock(mu_);
  std::string out;
  for (const auto& [name, e] : entries_) {
    switch (e.kind) {
      case Kind::Counter: render_simple(out, *e.counter, "counter"); break;
      case Kind::Gauge: render_simple(out, *e.gauge, "gauge"); break;
      case Kind::Histogram: render_histogram(out, *e.histogram); break;
      case Kind::Callback:
        header(out, name, e.help, "gauge");
        out += name + " " + number(e.read ? e.read() : 0) + "\n";
        break;
    }
  }
  return out;
}

}  // namespace kube
