// Wire format of the rendezvous store: one request frame per call, one response per request.
//   request:  u8 op | u32 key length | key | u64 value length | value     (little endian)
//   response: u8 status (0 ok, 1 error) | u64 length | value or error text
// set stores the value; get answers once the key exists (the server parks the request until a
// set or add creates it; the client enforces its own deadline); add adds the decimal int64 in
// value to the key's decimal value (absent = 0) and answers with the sum; try_get answers at
// once, "+" followed by the value when the key exists, "-" when it does not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "korovod/status.h"

namespace korovod::tcp {

enum class StoreOp : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kTryGet = 4 };

struct StoreRequest {
  StoreOp op = StoreOp::kGet;
  std::string key, value;
};

struct StoreResponse {
  bool ok = true;
  std::string value;  // the value, or the error text
};

constexpr size_t kMaxStoreKeyBytes = 4096;
constexpr uint64_t kMaxStoreValueBytes = 64ull << 20;

std::string encode_request(const StoreRequest& r);
std::string encode_response(const StoreResponse& r);
// Takes one whole frame off the front of `buffer`: nullopt while it is incomplete, an error when
// it is malformed (unknown op, oversized key or value).
Result<std::optional<StoreRequest>> take_request(std::string& buffer);
Result<std::optional<StoreResponse>> take_response(std::string& buffer);

}  // namespace korovod::tcp
