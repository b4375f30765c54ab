#include "transport/tcp/store_protocol.h"

#include <fmt/format.h>

namespace korovod::tcp {
namespace {

template <typename T>
void put(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
}

template <typename T>
T get_at(const std::string& in, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[at + i])) << (8 * i);
  return static_cast<T>(v);
}

}  // namespace

std::string encode_request(const StoreRequest& r) {
  std::string out;
  put<uint8_t>(out, static_cast<uint8_t>(r.op));
  put<uint32_t>(out, static_cast<uint32_t>(r.key.size()));
  out += r.key;
  put<uint64_t>(out, r.value.size());
  out += r.value;
  return out;
}

std::string encode_response(const StoreResponse& r) {
  std::string out;
  put<uint8_t>(out, r.ok ? 0 : 1);
  put<uint64_t>(out, r.value.size());
  out += r.value;
  return out;
}

Result<std::optional<StoreRequest>> take_request(std::string& buffer) {
  if (buffer.size() < 5) return std::optional<StoreRequest>();
  const uint8_t op = get_at<uint8_t>(buffer, 0);
  if (op < 1 || op > 4) return Status::invalid_argument(fmt::format("rendezvous store: unknown request {}", op));
  const uint32_t key_len = get_at<uint32_t>(buffer, 1);
  if (key_len > kMaxStoreKeyBytes) return Status::invalid_argument(fmt::format("rendezvous store: key of {} bytes", key_len));
  if (buffer.size() < 5 + key_len + 8) return std::optional<StoreRequest>();
  const uint64_t value_len = get_at<uint64_t>(buffer, 5 + key_len);
  if (value_len > kMaxStoreValueBytes) {
    return Status::invalid_argument(fmt::format("rendezvous store: value of {} bytes", value_len));
  }
  const size_t total = 5 + key_len + 8 + value_len;
  if (buffer.size() < total) return std::optional<StoreRequest>();
  StoreRequest r{static_cast<StoreOp>(op), buffer.substr(5, key_len), buffer.substr(5 + key_len + 8, value_len)};
  buffer.erase(0, total);
  return std::optional<StoreRequest>(std::move(r));
}

Result<std::optional<StoreResponse>> take_response(std::string& buffer) {
  if (buffer.size() < 9) return std::optional<StoreResponse>();
  const uint8_t status = get_at<uint8_t>(buffer, 0);
  const uint64_t len = get_at<uint64_t>(buffer, 1);
  if (status > 1 || len > kMaxStoreValueBytes) return Status::invalid_argument("rendezvous store: malformed response");
  if (buffer.size() < 9 + len) return std::optional<StoreResponse>();
  StoreResponse r{status == 0, buffer.substr(9, len)};
  buffer.erase(0, 9 + len);
  return std::optional<StoreResponse>(std::move(r));
}

}  // namespace korovod::tcp
