// Watch streams from the API server: the HTTP body split into lines by the REST client's reader
// (operator/kube/rest_watch_stream.h over cpprestsdk's read_line), each line parsed into an
// event (parse_watch_event), and the events driven through the Watcher state machine
// (operator/kube/watcher.cc) as an informer runs it.
//
// Invariants, for any response body:
//  - every non-blank line (lines end at \n, \r\n or \r) reaches the Watcher in order, none
//    lost, merged or repeated: ADDED/MODIFIED come out as Applied, DELETED as Deleted,
//    BOOKMARK as nothing, each with the line's object; the stream stops at the first line that
//    is not an event (an error the Watcher backs off from) or at an ERROR event;
//  - the Watcher's resourceVersion is the last one the events carried (the relist's after a
//    410 ERROR);
//  - an event re-serialized as {"type","object"} parses back to the same event, and an ERROR
//    event's Status survives to_status(from_status(...));
//  - no crash, no hang, no exception out of the Watcher.
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cpprest/producerconsumerstream.h>

#include "fuzz_check.h"
#include "kube/api_error.h"
#include "kube/object_meta.h"
#include "kube/rest_watch_stream.h"
#include "kube/watcher.h"

namespace {

using kube::Object;
using kube::WatchEvent;

const char* const kRelistVersion = "relisted";

// Lines as cpprestsdk's read_line splits them.
std::vector<std::string> lines_of(const std::string& body) {
  std::vector<std::string> lines;
  std::string line;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < body.size() && body[i + 1] == '\n') ++i;
      lines.push_back(std::move(line));
      line.clear();
    } else {
      line.push_back(c);
    }
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

const char* type_name(WatchEvent::Type t) {
  switch (t) {
    case WatchEvent::Type::Added: return "ADDED";
    case WatchEvent::Type::Modified: return "MODIFIED";
    case WatchEvent::Type::Deleted: return "DELETED";
    case WatchEvent::Type::Bookmark: return "BOOKMARK";
    case WatchEvent::Type::Error: return "ERROR";
  }
  return "?";
}

struct Expected {
  std::vector<kube::WatcherEvent> events;  // Applied / Deleted, in order
  std::string resource_version = kRelistVersion;
};

Expected expect(const std::string& body) {
  Expected out;
  for (const std::string& line : lines_of(body)) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    WatchEvent e;
    try {
      e = kube::rest::parse_watch_event(line);
    } catch (const kube::ApiError&) {
      break;  // the stream fails here
    }
    const Object again = Object{{"type", type_name(e.type)}, {"object", e.object}};
    const WatchEvent back = kube::rest::parse_watch_event(again.dump());
    FUZZ_CHECK(back.type == e.type && back.object == e.object, "event round trip: " + line);
    if (e.type == WatchEvent::Type::Error) {
      const kube::ApiError status = kube::from_status(0, e.object);
      const kube::ApiError back_status = kube::from_status(0, kube::to_status(status));
      FUZZ_CHECK(back_status.code() == status.code() && back_status.reason() == status.reason() &&
                     back_status.api_message() == status.api_message(),
                 "Status round trip: " + line);
      if (status.code() == 410) out.resource_version = kRelistVersion;
      break;
    }
    if (const std::string rv = kube::resource_version_of(e.object); !rv.empty())
      out.resource_version = rv;
    if (e.type == WatchEvent::Type::Bookmark) continue;
    out.events.push_back({e.type == WatchEvent::Type::Deleted ? kube::WatcherEvent::Type::Deleted
                                                              : kube::WatcherEvent::Type::Applied,
                          {}, e.object, false});
  }
  return out;
}

// Lists nothing; its first watch is the body through the real REST stream reader, a second
// watch (the Watcher resuming) stops the Watcher.
class ReplayClient final : public kube::Client {
 public:
  explicit ReplayClient(std::string body) : body_(std::move(body)) {}
  kube::Watcher* watcher = nullptr;

  kube::ListResult list(const kube::Resource&, const std::string&, const kube::ListOptions&) override {
    kube::ListResult page;
    page.resource_version = kRelistVersion;
    return page;
  }
  std::unique_ptr<kube::WatchStream> watch(const kube::Resource&, const std::string&,
                                           const kube::ListOptions&) override {
    if (watched_) watcher->stop();
    watched_ = true;
    // The body as http_client delivers one: a producer/consumer buffer of bytes, here already
    // complete. (set_body(std::string) would reinterpret a char buffer as a byte buffer, a
    // type pun inside cpprestsdk that UBSan reports.)
    const std::string& body = watched_once_ ? std::string() : body_;
    watched_once_ = true;
    concurrency::streams::producer_consumer_buffer<uint8_t> buffer;
    buffer.putn_nocopy(reinterpret_cast<const uint8_t*>(body.data()), body.size()).wait();
    buffer.close(std::ios_base::out).wait();
    web::http::http_response response(200);
    response.set_body(buffer.create_istream());
    return std::make_unique<kube::rest::RestWatchStream>(response, pplx::cancellation_token_source(),
                                                         std::make_shared<kube::RealClock>());
  }
  Object get(const kube::Resource&, const std::string&, const std::string&) override { return unused(); }
  Object create(const kube::Resource&, const std::string&, const Object&) override { return unused(); }
  Object update(const kube::Resource&, const std::string&, const Object&) override { return unused(); }
  Object update_status(const kube::Resource&, const std::string&, const Object&) override { return unused(); }
  Object patch(const kube::Resource&, const std::string&, const std::string&, kube::PatchType,
               const std::string&, const kube::PatchOptions&) override {
    return unused();
  }
  void remove(const kube::Resource&, const std::string&, const std::string&, const kube::DeleteOptions&) override {
    unused();
  }

 private:
  [[noreturn]] static Object unused() { throw std::logic_error("not used by the Watcher"); }
  const std::string body_;
  bool watched_ = false, watched_once_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  const Expected expected = expect(body);

  kube::RealClock clock;
  ReplayClient client(body);
  kube::WatcherOptions options;
  options.poll = std::chrono::milliseconds(20);
  options.backoff_base = options.backoff_max = std::chrono::milliseconds(0);
  kube::Watcher watcher(client, kube::resources::kConfigMaps, options, clock);
  client.watcher = &watcher;
  std::vector<kube::WatcherEvent> got;
  while (auto ev = watcher.next())
    if (ev->type != kube::WatcherEvent::Type::Restarted) got.push_back(std::move(*ev));

  FUZZ_CHECK(got.size() == expected.events.size(),
             std::to_string(got.size()) + " events, expected " +
                 std::to_string(expected.events.size()) + ": " + fuzz::excerpt(body));
  for (size_t i = 0; i < got.size(); ++i)
    FUZZ_CHECK(got[i].type == expected.events[i].type && got[i].object == expected.events[i].object,
               "event " + std::to_string(i) + " differs: " + got[i].object.dump());
  FUZZ_CHECK(watcher.resource_version() == expected.resource_version,
             "resourceVersion " + watcher.resource_version() + ", expected " + expected.resource_version);
  return 0;
}
