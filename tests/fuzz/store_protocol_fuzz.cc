// The rendezvous store's wire protocol (worker-runtime/src/transport/tcp/store_protocol.cc):
// what the store server reads from any connection (take_request) and a client reads back
// (take_response), frame by frame from a growing receive buffer.
//
// Invariants, for any bytes taken as one connection's stream:
//  - a frame taken re-encodes to exactly the bytes it consumed;
//  - the frames and the error do not depend on how the bytes arrive: all at once and one
//    byte at a time give the same result (TCP splits streams anywhere);
//  - oversized keys and values are refused before they are buffered (the limits hold);
// and a request or response built from the bytes round-trips: take(encode(x)) == x.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "transport/tcp/store_protocol.h"

namespace {

using namespace korovod::tcp;

struct Framed {
  std::vector<std::string> frames;  // the bytes each frame consumed, re-encoded
  std::optional<std::string> error;
  size_t left = 0;  // bytes of an incomplete frame still buffered
};

template <typename Take, typename Encode>
Framed frame_stream(const std::string& bytes, size_t chunk, Take take, Encode encode) {
  Framed out;
  std::string buffer;
  for (size_t at = 0; at < bytes.size() && !out.error; at += chunk) {
    buffer.append(bytes, at, chunk);
    for (;;) {
      auto r = take(buffer);
      if (!r.is_ok()) {
        out.error = r.status().message();
        break;
      }
      if (!*r) break;
      out.frames.push_back(encode(**r));
    }
  }
  out.left = buffer.size();
  return out;
}

template <typename Take, typename Encode>
void check_stream(const std::string& bytes, Take take, Encode encode, const char* what) {
  const Framed whole = frame_stream(bytes, bytes.size() + 1, take, encode);
  std::string consumed;
  for (const auto& f : whole.frames) consumed += f;
  FUZZ_CHECK(bytes.compare(0, consumed.size(), consumed) == 0,
             std::string(what) + " frames re-encode differently: " + fuzz::excerpt(bytes));
  if (!whole.error) FUZZ_CHECK(consumed.size() + whole.left == bytes.size(), what);
  const Framed bytewise = frame_stream(bytes, 1, take, encode);
  FUZZ_CHECK(bytewise.frames == whole.frames && bytewise.error == whole.error,
             std::string(what) + " frames depend on how the bytes arrive: " + fuzz::excerpt(bytes));
  // An incomplete frame never holds more than a header, the largest key and the largest value.
  FUZZ_CHECK(whole.left <= 13 + kMaxStoreKeyBytes + kMaxStoreValueBytes, what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  check_stream(bytes, take_request, [](const StoreRequest& r) { return encode_request(r); },
               "request");
  check_stream(bytes, take_response, [](const StoreResponse& r) { return encode_response(r); },
               "response");

  fuzz::Bytes in(data, size);
  StoreRequest request{static_cast<StoreOp>(1 + in.pod<uint8_t>() % 3), in.str(255), in.str(255)};
  std::string wire = encode_request(request);
  const auto back = take_request(wire);
  FUZZ_CHECK(back.is_ok() && back->has_value(), "an encoded request does not decode");
  FUZZ_CHECK((*back)->op == request.op && (*back)->key == request.key &&
                 (*back)->value == request.value && wire.empty(),
             "request changed in a round trip");
  StoreResponse response{(in.pod<uint8_t>() & 1) == 0, in.str(255)};
  wire = encode_response(response);
  const auto response_back = take_response(wire);
  FUZZ_CHECK(response_back.is_ok() && response_back->has_value(), "an encoded response does not decode");
  FUZZ_CHECK((*response_back)->ok == response.ok && (*response_back)->value == response.value &&
                 wire.empty(),
             "response changed in a round trip");
  return 0;
}
