// Private to rest_client.cc (it pulls in cpprestsdk): the WatchStream of a RestClient.
// Kept header-only because korovod_kube compiles a fixed list of .cc files for the REST half.
//
// The response body of a watch is read asynchronously, one line (= one JSON event) at a time,
// by a chain of pplx continuations; next() waits on a queue they fill. close() cancels the
// request, which makes cpprestsdk close the socket, so the chain ends promptly. The destructor
// waits (bounded) for the chain to end: work still queued on cpprestsdk's thread pool when the
// process exits is dropped without being freed (the watch stream fuzz target's exit saw it).
#pragma once

#include <condition_variable>
#include <deque>
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

class RestWatchStream final : public WatchStream {
 public:
  // `clock` is shared so the stream may outlive the client that made it.
  RestWatchStream(web::http::http_response response, pplx::cancellation_token_source cancel,
                  std::shared_ptr<Clock> clock)
      : state_(std::make_shared<State>()), clock_(std::move(clock)) {
    state_->cancel = std::move(cancel);
    read_next_line(state_, response.body());
  }
  ~RestWatchStream() override {
    close();
    kube::MutexLock lock(state_->mu);
    clock_->wait_until(lock, state_->cv, clock_->steady_now() + kChainEndBound,
                       [&]() KOROVOD_REQUIRES(state_->mu) { return !state_->reading; });
  }

  std::optional<WatchEvent> next(std::chrono::milliseconds timeout) override {
    kube::MutexLock lock(state_->mu);
    const auto deadline = clock_->steady_now() + timeout;
    clock_->wait_until(lock, state_->cv, deadline, [&]() KOROVOD_REQUIRES(state_->mu) {
      return !state_->events.empty() || state_->error || state_->ended || state_->closed;
    });
    if (!state_->events.empty()) {
      WatchEvent e = std::move(state_->events.front());
      state_->events.pop_front();
      return e;
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

  bool ended() const override {
    kube::MutexLock lock(state_->mu);
    return (state_->ended || state_->closed) && state_->events.empty() && !state_->error;
  }

  void close() override {
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
    std::deque<WatchEvent> events KOROVOD_GUARDED_BY(mu);
    std::optional<ApiError> error KOROVOD_GUARDED_BY(mu);
    bool ended KOROVOD_GUARDED_BY(mu) = false;             // the server closed the stream
    bool closed KOROVOD_GUARDED_BY(mu) = false;            // close() was called
    bool reading KOROVOD_GUARDED_BY(mu) = true;            // the read chain has not ended
    pplx::cancellation_token_source cancel;
  };

  // How long the destructor waits for the read chain to end after close(): the cancelled
  // request ends it at once; a chain still reading after this keeps its state alive itself.
  static constexpr std::chrono::seconds kChainEndBound{10};

  // Reads one line, queues its event, and schedules the next read. The chain owns the state
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
      if (!text.empty() && text.find_first_not_of(" \r\n\t") != std::string::npos)
        return deliver(st, parse_watch_event(text));
      return true;
    } catch (const ApiError& e) {
      finish(st, e);
    } catch (const std::exception& e) {
      finish(st, ApiError(0, "ConnectionFailed", std::string("watch stream: ") + e.what()));
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

  // Queues an event. An ERROR event (a Status, e.g. 410 Expired) is delivered like any other,
  // as MemoryClient does, and ends the stream: the server closes it after one anyway.
  // Returns whether reading should go on.
  static bool deliver(State& st, WatchEvent event) {
    const bool error = event.type == WatchEvent::Type::Error;
    {
      kube::MutexLock lock(st.mu);
      if (st.closed) return false;
      st.events.push_back(std::move(event));
      if (error) st.ended = true;
    }
    st.cv.notify_all();
    if (error) st.cancel.cancel();
    return !error;
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

}  // namespace kube::rest
