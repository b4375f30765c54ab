// korovod-kube-bench: the korovod side of the Kubernetes client benchmark (bench/README.md).
// The same work as the client-go peer (bench/clientgo/main.go) against the same API server:
//
//   (a) create N ConfigMaps in a fresh namespace with C requests in flight
//   (b) informer sync of M pre-created ConfigMaps (~1 KiB of data each): start until synced
//   (c) the informer cache's memory: malloc'd bytes (mallinfo2 after malloc_trim) and RSS,
//       before vs after sync, with the informer still running
//
// Progress goes to stderr; stdout carries exactly one JSON document (schema 1, bench/README.md).
#include <malloc.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kube/config.h"
#include "kube/informer.h"
#include "kube/rest_client.h"

#ifndef KOROVOD_VERSION
#define KOROVOD_VERSION "0.0.0-dev"
#endif

namespace {

using SteadyClock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;  // keeps the schema's field order

// The benchmark's objects carry korovod-bench=create or korovod-bench=sync; the informer selects
// korovod-bench=sync so the kube-root-ca.crt ConfigMap of every namespace is not counted.
constexpr const char* kBenchLabel = "korovod-bench";

struct Flags {
  std::string kubeconfig;
  int creates = 2000;
  int concurrency = 16;
  int sync_objects = 5000;
  int object_bytes = 1024;
  double qps = 1000;
  int burst = 1000;
  bool keep = false;
  bool protobuf = false;
};

template <typename... Args>
void logf(const char* fmt, Args... args) {
  std::fprintf(stderr, "korovod-kube-bench: ");
  if constexpr (sizeof...(Args) == 0) {
    std::fputs(fmt, stderr);
  } else {
    std::fprintf(stderr, fmt, args...);
  }
  std::fputc('\n', stderr);
}

[[noreturn]] void fatal(const std::string& msg) {
  logf("%s", msg.c_str());
  std::exit(1);
}

double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// CPU seconds (user + system) this process has used so far: logged per phase, for profiling.
double cpu_seconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

// A "Name:  N kB" line of /proc/self/status (VmRSS, RssAnon, RssFile), in bytes.
uint64_t status_bytes(std::string_view name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == ':') {
      std::istringstream fields(line.substr(name.size() + 1));
      uint64_t kb = 0;
      fields >> kb;
      return kb * 1024;
    }
  }
  return 0;
}
uint64_t rss_bytes() { return status_bytes("VmRSS"); }

// Bytes the allocator has handed out and not had back: the C++ counterpart of Go's HeapInuse
// after a GC (the README's definition). malloc_trim first returns free pages, so RSS is comparable.
uint64_t heap_bytes() {
  malloc_trim(0);
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

// Creates n ConfigMaps named prefix-%05d with `workers` requests in flight (each worker takes
// the next index). Returns (seconds from the first request to the last response, errors).
std::pair<double, int64_t> create_config_maps(kube::Client& client, const std::string& ns,
                                              const std::string& prefix, const std::string& phase,
                                              int n, int workers, const std::string* payload) {
  std::atomic<int> next{0};
  std::atomic<int64_t> errors{0};
  std::vector<std::thread> threads;
  threads.reserve(workers);
  const auto start = SteadyClock::now();
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      char name[64];
      for (;;) {
        const int i = next.fetch_add(1);
        if (i >= n) return;
        std::snprintf(name, sizeof name, "%s-%05d", prefix.c_str(), i);
        kube::Object cm = {
            {"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"labels", {{kBenchLabel, phase}}}}},
        };
        if (payload != nullptr) {
          cm["data"] = {{"payload", *payload}};
        } else {
          cm["data"] = {{"index", std::to_string(i)}};
        }
        try {
          client.create(kube::resources::kConfigMaps, ns, cm);
        } catch (const std::exception& e) {
          if (errors.fetch_add(1) < 3) logf("create %s/%s: %s", ns.c_str(), name, e.what());
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return {seconds_since(start), errors.load()};
}

void create_namespace(kube::Client& client, const std::string& name) {
  try {
    client.create(kube::resources::kNamespaces, "",
                  {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
  } catch (const std::exception& e) {
    fatal("create namespace " + name + ": " + e.what());
  }
}

Json number(double v) {
  // 1000 rather than 1000.0 when the value is integral (as the Go peer prints it).
  if (v == static_cast<double>(static_cast<int64_t>(v))) return static_cast<int64_t>(v);
  return v;
}

int run(const Flags& f) {
  kube::Config config;
  try {
    config = kube::load_kubeconfig(f.kubeconfig);
  } catch (const std::exception& e) {
    fatal(std::string("kubeconfig: ") + e.what());
  }
  kube::RestClientOptions options;
  options.qps = f.qps;
  options.burst = f.burst;
  options.user_agent = std::string("korovod-kube-bench/") + KOROVOD_VERSION;
  kube::RestClient client(config, options);

  std::string server_version;
  try {
    server_version = client.raw_get("/version").value("gitVersion", "");
  } catch (const std::exception& e) {
    fatal(std::string("server version: ") + e.what());
  }

  std::random_device rd;
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, "%lld-%04u",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count()),
                rd() % 10000);
  const std::string ns_create = std::string("bench-korovod-create-") + suffix;
  const std::string ns_sync = std::string("bench-korovod-sync-") + suffix;

  Json rep;
  rep["schema"] = 1;
  rep["client"] = std::string("korovod ") + KOROVOD_VERSION;
  rep["server_version"] = server_version;
  rep["content_type"] = "application/json";
  rep["qps"] = number(f.qps);
  rep["burst"] = f.burst;

  // (a) creates
  create_namespace(client, ns_create);
  logf("(a) creating %d ConfigMaps in %s with %d in flight", f.creates, ns_create.c_str(),
       f.concurrency);
  double cpu0 = cpu_seconds();
  const auto [create_s, create_errors] =
      create_config_maps(client, ns_create, "cm", "create", f.creates, f.concurrency, nullptr);
  const double create_cpu = cpu_seconds() - cpu0;
  const double create_rps = f.creates / create_s;
  rep["create"] = {{"objects", f.creates},
                   {"concurrency", f.concurrency},
                   {"seconds", create_s},
                   {"requests_per_second", create_rps},
                   {"errors", create_errors}};
  logf("(a) %.0f req/s (%lld errors); %.3f s of CPU in this process (%.0f us per request)",
       create_rps, static_cast<long long>(create_errors), create_cpu,
       f.creates > 0 ? create_cpu * 1e6 / f.creates : 0.0);

  // (b) informer sync: pre-create the objects, then time start -> synced.
  create_namespace(client, ns_sync);
  logf("(b) preparing %d ConfigMaps with %d bytes of data in %s", f.sync_objects, f.object_bytes,
       ns_sync.c_str());
  double prepare_s = 0;
  {
    const std::string payload(static_cast<size_t>(f.object_bytes), 'x');
    const auto [s, errs] = create_config_maps(client, ns_sync, "obj", "sync", f.sync_objects,
                                              f.concurrency, &payload);
    if (errs > 0) fatal("(b) " + std::to_string(errs) + " errors creating the objects to sync");
    prepare_s = s;
  }

  const uint64_t heap_before = heap_bytes();
  const uint64_t rss_before = rss_bytes();
  const uint64_t anon_before = status_bytes("RssAnon"), file_before = status_bytes("RssFile");

  kube::RealClock clock;
  kube::InformerOptions io;  // the library's defaults (paged list of 500, then watch)
  io.watcher.ns = ns_sync;
  io.watcher.label_selector = std::string(kBenchLabel) + "=sync";
  io.watcher.on_error = [](const std::string& e) { logf("informer: %s", e.c_str()); };
  kube::Informer informer(client, kube::resources::kConfigMaps, std::move(io), clock);
  // Counts the initial adds: the informer delivers them after marking itself synced, and only
  // once they are all delivered has it let go of the list it synced from (see (c)).
  std::atomic<int64_t> adds{0};
  informer.on_add([&adds](const kube::ObjectEvent&) { adds.fetch_add(1, std::memory_order_relaxed); });

  cpu0 = cpu_seconds();
  const auto sync_start = SteadyClock::now();
  informer.start();
  if (!informer.wait_for_sync(std::chrono::minutes(5))) fatal("(b) informer did not sync");
  const double sync_s = seconds_since(sync_start);
  const double sync_cpu = cpu_seconds() - cpu0;
  const int64_t cached = static_cast<int64_t>(informer.store().size());
  rep["informer_sync"] = {{"objects", f.sync_objects},
                          {"object_data_bytes", f.object_bytes},
                          {"prepare_seconds", prepare_s},
                          {"seconds", sync_s},
                          {"objects_per_second", f.sync_objects / sync_s},
                          {"cached_objects", cached}};
  logf("(b) synced %lld objects in %.3fs; %.3f s of CPU in this process",
       static_cast<long long>(cached), sync_s, sync_cpu);

  // (c) the cache's memory, with the informer running and holding its store. Go's measurement
  // runs a GC, so the list the informer synced from is not counted there; here it is freed when
  // the informer thread finishes delivering the initial adds, so wait for that (plus a moment
  // for the thread to return from the handler loop) before measuring.
  const auto settle_deadline = SteadyClock::now() + std::chrono::seconds(60);
  while (adds.load() < cached && SteadyClock::now() < settle_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const uint64_t heap_after = heap_bytes();
  const uint64_t rss_after = rss_bytes();
  const int64_t heap_delta = static_cast<int64_t>(heap_after) - static_cast<int64_t>(heap_before);
  const int64_t rss_delta = static_cast<int64_t>(rss_after) - static_cast<int64_t>(rss_before);
  const int64_t per_object = cached > 0 ? heap_delta / cached : 0;
  rep["cache_memory"] = {
      {"objects", cached},
      {"heap_before_bytes", heap_before},
      {"heap_after_bytes", heap_after},
      {"heap_delta_bytes", heap_delta},
      {"rss_before_bytes", rss_before},
      {"rss_after_bytes", rss_after},
      {"rss_delta_bytes", rss_delta},
      {"bytes_per_object", per_object},
      {"heap_measure", "glibc mallinfo2() uordblks+hblkhd after malloc_trim(0)"},
  };
  logf("(c) heap %+lld bytes (%lld per object), rss %+lld bytes (store's own estimate %zu bytes)",
       static_cast<long long>(heap_delta), static_cast<long long>(per_object),
       static_cast<long long>(rss_delta), informer.store().approx_bytes());
  logf("(c) rss split: anonymous %+lld bytes, file-backed (code and data of the libraries) %+lld bytes",
       static_cast<long long>(status_bytes("RssAnon")) - static_cast<long long>(anon_before),
       static_cast<long long>(status_bytes("RssFile")) - static_cast<long long>(file_before));
  informer.stop();

  if (!f.keep) {
    for (const auto& ns : {ns_create, ns_sync}) {
      try {
        client.remove(kube::resources::kNamespaces, "", ns, {});
      } catch (const std::exception& e) {
        logf("delete namespace %s: %s", ns.c_str(), e.what());
      }
    }
  }
  std::cout << rep.dump(2) << std::endl;
  return create_errors == 0 && cached == f.sync_objects ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (const char* env = std::getenv("KUBECONFIG")) f.kubeconfig = env;
  CLI::App app{
      "korovod-kube-bench: operator/kube's side of the Kubernetes client benchmark against "
      "client-go (bench/README.md). Prints one JSON document (schema 1) on stdout; progress "
      "on stderr. Exit status 0 only when every create succeeded and the cache holds exactly "
      "--sync-objects objects.",
      "korovod-kube-bench"};
  app.add_option("--kubeconfig", f.kubeconfig, "kubeconfig file (default $KUBECONFIG)");
  app.add_option("--creates", f.creates, "(a) ConfigMaps to create")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--concurrency", f.concurrency, "requests in flight for creates")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--sync-objects", f.sync_objects, "(b) ConfigMaps the informer syncs")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--object-bytes", f.object_bytes, "bytes of data in each synced ConfigMap")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--qps", f.qps, "client-side QPS limit")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--burst", f.burst, "client-side burst")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_flag("--keep", f.keep, "keep the benchmark namespaces");
  app.add_flag("--protobuf", f.protobuf,
               "accepted for symmetry with the client-go peer; operator/kube speaks JSON only, "
               "so this fails");
  CLI11_PARSE(app, argc, argv);
  if (f.kubeconfig.empty()) {
    logf("--kubeconfig (or KUBECONFIG) is required (see --help)");
    return 2;
  }
  if (f.protobuf) {
    logf("--protobuf: operator/kube speaks JSON only (application/json)");
    return 2;
  }
  // What a korovod binary's main does before its first RestClient (operator/kube/README.md):
  // a small cpprestsdk pool, and no system CA bundle parsed per TLS connection.
  kube::HttpRuntimeOptions runtime;
  // 2 pool threads: less client CPU per create than 4 (bench/results/2026-11-22-kube-client.md).
  runtime.threads = 2;
  runtime.skip_default_verify_paths = true;
  kube::configure_http_runtime(runtime);
  return run(f);
}
