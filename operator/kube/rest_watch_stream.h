// Private to rest_client.cc (it pulls in cpprestsdk): the streams of a RestClient, a watch's
// (RestWatchStream) and a followed text body's, such as a pod's log (RestTextStream). Kept
// header-only because korovod_kube compiles a fixed list of .cc files for the REST half.
//
// A streamed response body is read asynchronously, one line at a time, by a chain of pplx
// continuations (RestLineStream); next() waits on a queue they fill. close() cancels the
// request, which makes cpprestsdk close the socket, so the chain ends promptly. The destructor
// waits (bounded) for the chain to end: work still queued on cpprestsdk's thread pool when the
// process exits is dropped without being freed (the watch stream fuzz target's exit saw it).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include "kube/api_error.h"
#include "kube/clock.h"
#include "kube/mutex.h"
#include "kube/rest_client.h"

namespace kube::rest {

// The lines of a streamed body as Items. `decode` turns one line (without its "\n") into an
// Item, or throws ApiError for a malformed one (the stream then fails with it); it sets `last`
// when no line may follow that one (a watch's ERROR event). Blank lines are skipped unless
// `keep_blank_lines`.
template <typename Item>
class RestLineStream {
 public:
  using Decode = std::function<Item(const std::string& line, bool& last)>;

  // `clock` is shared so the stream may outlive the client that made it.
  RestLineStream(web::http::http_response response, pplx::cancellation_token_source cancel,
                 std::shared_ptr<Clock> clock, Decode decode, bool keep_blank_lines)
      : state_(std::make_shared<State>()), clock_(std::move(clock)) {
    state_->cancel = std::move(cancel);
    state_->decode = std::move(decode);
    state_->keep_blank_lines = keep_blank_lines;
    read_next_line(state_, response.body());
  }
  ~RestLineStream() {
    close();
    kube::MutexLock lock(state_->mu);
    clock_->wait_until(lock, state_->cv, clock_->steady_now() + kChainEndBound,
                       [&]() KOROVOD_REQUIRES(state_->mu) { return !state_->reading; });
  }
  RestLineStream(const RestLineStream&) = delete;
  RestLineStream& operator=(const RestLineStream&) = delete;

  std::optional<Item> next(std::chrono::milliseconds timeout) {
    kube::MutexLock lock(state_->mu);
    const auto deadline = clock_->steady_now() + timeout;
    clock_->wait_until(lock, state_->cv, deadline, [&]() KOROVOD_REQUIRES(state_->mu) {
      return !state_->items.empty() || state_->error || state_->ended || state_->closed;
    });
    if (!state_->items.empty()) {
      Item item = std::move(state_->items.front());
      state_->items.pop_front();
      return item;
    }
    if (state_->error) {
      // Reported once; afterwards the stream reads as ended.
      ApiError e = *state_->error;
      state_->error.reset();
      state_->ended = true;
      throw e;
    }
    return std::nullopt;
  }

  bool ended() const {
    kube::MutexLock lock(state_->mu);
    return (state_->ended || state_->closed) && state_->items.empty() && !state_->error;
  }

  void close() {
    {
      kube::MutexLock lock(state_->mu);
      if (state_->closed) return;
      state_->closed = true;
    }
    state_->cancel.cancel();
    state_->cv.notify_all();
  }

 private:
  struct State {
    kube::Mutex mu;
    std::condition_variable cv;
    std::deque<Item> items KOROVOD_GUARDED_BY(mu);
    std::optional<ApiError> error KOROVOD_GUARDED_BY(mu);
    bool ended KOROVOD_GUARDED_BY(mu) = false;             // the server closed the stream
    bool closed KOROVOD_GUARDED_BY(mu) = false;            // close() was called
    bool reading KOROVOD_GUARDED_BY(mu) = true;            // the read chain has not ended
    pplx::cancellation_token_source cancel;
    Decode decode;                                          // set before the chain starts
    bool keep_blank_lines = false;
  };

  // How long the destructor waits for the read chain to end after close(): the cancelled
  // request ends it at once; a chain still reading after this keeps its state alive itself.
  static constexpr std::chrono::seconds kChainEndBound{10};

  // Reads one line, queues its item, and schedules the next read. The chain owns the state
  // (shared_ptr) so it may outlive the stream object; it stops at end of stream, at an error
  // or once the stream is closed, and says so (`reading`).
  static void read_next_line(std::shared_ptr<State> st, concurrency::streams::istream body) {
    // A byte buffer, as the body is: cpprestsdk passes a std::string buffer to read_line by
    // reinterpreting it as a byte buffer (UB that UBSan reports in the watch stream fuzz target).
    auto line = std::make_shared<concurrency::streams::container_buffer<std::vector<uint8_t>>>();
    body.read_line(*line).then([st, body, line](pplx::task<size_t> read) {
      if (read_line_done(*st, read, body, *line)) read_next_line(st, body);
      else stop_reading(*st);
    });
  }

  // Handles one read line; returns whether to read the next.
  static bool read_line_done(State& st, pplx::task<size_t>& read,
                             const concurrency::streams::istream& body,
                             concurrency::streams::container_buffer<std::vector<uint8_t>>& line) {
    try {
      const size_t n = read.get();
      const std::vector<uint8_t>& bytes = line.collection();
      std::string text(bytes.begin(), bytes.end());
      if (n == 0 && text.empty() && body.is_eof()) {
        finish(st, std::nullopt);
        return false;
      }
      if (!text.empty() && text.back() == '\r') text.pop_back();
      if (!st.keep_blank_lines && text.find_first_not_of(" \r\n\t") == std::string::npos) return true;
      bool last = false;
      Item item = st.decode(text, last);
      return deliver(st, std::move(item), last);
    } catch (const ApiError& e) {
      finish(st, e);
    } catch (const std::exception& e) {
      finish(st, ApiError(0, "ConnectionFailed", std::string("stream: ") + e.what()));
    }
    return false;
  }

  static void stop_reading(State& st) {
    {
      kube::MutexLock lock(st.mu);
      st.reading = false;
    }
    st.cv.notify_all();
  }

  // Queues an item; a `last` one ends the stream (and its request). Returns whether reading
  // should go on.
  static bool deliver(State& st, Item item, bool last) {
    {
      kube::MutexLock lock(st.mu);
      if (st.closed) return false;
      st.items.push_back(std::move(item));
      if (last) st.ended = true;
    }
    st.cv.notify_all();
    if (last) st.cancel.cancel();
    return !last;
  }

  static void finish(State& st, std::optional<ApiError> error) {
    {
      kube::MutexLock lock(st.mu);
      // Errors caused by our own close() are not failures.
      if (error && !st.closed && !st.error && !st.ended) st.error = std::move(error);
      else st.ended = true;
    }
    st.cv.notify_all();
  }

  std::shared_ptr<State> state_;
  const std::shared_ptr<Clock> clock_;
};

// A watch: each line one event. An ERROR event (a Status, e.g. 410 Expired) is delivered like
// any other, as MemoryClient does, and ends the stream: the server closes it after one anyway.
class RestWatchStream final : public WatchStream {
 public:
  RestWatchStream(web::http::http_response response, pplx::cancellation_token_source cancel,
                  std::shared_ptr<Clock> clock)
      : lines_(std::move(response), std::move(cancel), std::move(clock), decode, false) {}

  std::optional<WatchEvent> next(std::chrono::milliseconds timeout) override { return lines_.next(timeout); }
  bool ended() const override { return lines_.ended(); }
  void close() override { lines_.close(); }

 private:
  static WatchEvent decode(const std::string& line, bool& last) {
    WatchEvent event = parse_watch_event(line);
    last = event.type == WatchEvent::Type::Error;
    return event;
  }

  RestLineStream<WatchEvent> lines_;
};

// A followed text body (a pod's log with follow=true): each line as it comes, blank ones too.
class RestTextStream final : public LineStream {
 public:
  RestTextStream(web::http::http_response response, pplx::cancellation_token_source cancel,
                 std::shared_ptr<Clock> clock)
      : lines_(std::move(response), std::move(cancel), std::move(clock),
               [](const std::string& line, bool&) { return line; }, true) {}

  std::optional<std::string> next(std::chrono::milliseconds timeout) override { return lines_.next(timeout); }
  bool ended() const override { return lines_.ended(); }
  void close() override { lines_.close(); }

 private:
  RestLineStream<std::string> lines_;
};

}  // namespace kube::rest
