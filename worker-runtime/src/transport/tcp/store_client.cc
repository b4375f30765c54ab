#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include "transport/tcp/store.h"

namespace korovod::tcp {

Result<std::unique_ptr<StoreClient>> StoreClient::connect(const Endpoint& server, double timeout_seconds,
                                                          std::string who, const JobSecret& secret,
                                                          std::shared_ptr<const Clock> clock) {
  const Deadline deadline = Deadline::after(timeout_seconds, clock.get());
  Result<os::Fd> fd = connect_to(server, SocketOptions{0}, deadline);
  if (!fd.is_ok()) {
    return Status::unknown(fmt::format("{}: cannot reach the rendezvous store within {} s: {}", who, timeout_seconds,
                                       fd.status().message()));
  }
  Status proven = authenticate_to_server(fd->get(), secret, "store", "", deadline,
                                         fmt::format("the rendezvous store at {}", server.to_string()));
  if (!proven.is_ok()) return Status(proven.code(), fmt::format("{}: {}", who, proven.message()));
  return std::unique_ptr<StoreClient>(
      new StoreClient(std::move(fd).value(), server, std::move(who), timeout_seconds, std::move(clock)));
}

Result<std::string> StoreClient::call(const StoreRequest& r, double timeout_seconds) {
  MutexLock lock(mu_);
  const std::string where = fmt::format("the rendezvous store at {}", server_.to_string());
  if (!fd_.valid()) return Status::aborted(fmt::format("{}: an earlier call to {} timed out", who_, where));
  const Deadline deadline = Deadline::after(timeout_seconds, clock_.get());
  const std::string frame = encode_request(r);
  Status sent = send_all(fd_.get(), frame.data(), frame.size(), deadline, where);
  for (; sent.is_ok();) {
    Result<std::optional<StoreResponse>> resp = take_response(buffer_);
    if (!resp.is_ok() && buffer_.rfind("KRVH", 0) == 0) {
      return Status::invalid_argument(fmt::format("{}: {} asks for the job secret, and this rank has none (set "
                                                  "KOROVOD_JOB_SECRET_FILE as the other ranks have it)",
                                                  who_, where));
    }
    if (!resp.is_ok()) return resp.status();
    if (resp->has_value()) {
      if (!(*resp)->ok) return Status::unknown(fmt::format("{}: {}: {}", who_, where, (*resp)->value));
      return std::move(**resp).value;
    }
    char chunk[64 * 1024];
    Status got = recv_all(fd_.get(), chunk, 1, deadline, where);  // at least one byte, then what is there
    if (!got.is_ok()) {
      sent = got;
      break;
    }
    buffer_.push_back(chunk[0]);
    const ssize_t more = recv(fd_.get(), chunk, sizeof chunk, MSG_DONTWAIT);
    if (more > 0) buffer_.append(chunk, static_cast<size_t>(more));
  }
  fd_.reset();  // a late answer would be taken for the next call's: this connection is done
  const char* verb = r.op == StoreOp::kGet      ? "waiting for"
                     : r.op == StoreOp::kSet    ? "setting"
                     : r.op == StoreOp::kTryGet ? "reading"
                                                : "adding to";
  return Status(sent.code() == StatusCode::kAborted ? StatusCode::kAborted : StatusCode::kUnknownError,
                fmt::format("{}: {} key {:?} in {}: {}", who_, verb, r.key, where, sent.message()));
}

Status StoreClient::set(const std::string& key, const std::string& value) {
  return call({StoreOp::kSet, key, value}, timeout_seconds_).status();
}

Result<std::string> StoreClient::get(const std::string& key, double timeout_seconds) {
  return call({StoreOp::kGet, key, ""}, timeout_seconds);
}

Result<int64_t> StoreClient::add(const std::string& key, int64_t delta) {
  Result<std::string> sum = call({StoreOp::kAdd, key, std::to_string(delta)}, timeout_seconds_);
  if (!sum.is_ok()) return sum.status();
  return static_cast<int64_t>(std::stoll(*sum));
}

Result<std::optional<std::string>> StoreClient::try_get(const std::string& key) {
  Result<std::string> answer = call({StoreOp::kTryGet, key, ""}, timeout_seconds_);
  if (!answer.is_ok()) return answer.status();
  if (*answer == "-") return std::optional<std::string>();
  if (answer->empty() || answer->front() != '+') {
    return Status::unknown(fmt::format("{}: reading key {:?}: malformed answer from the rendezvous store", who_, key));
  }
  return std::optional<std::string>(answer->substr(1));
}

}  // namespace korovod::tcp
