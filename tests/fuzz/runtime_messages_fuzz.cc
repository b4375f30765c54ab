// The runtime's negotiation wire messages (worker-runtime/src/core/message.cc): the request and
// response lists every rank sends and receives on the control plane each cycle.
//
// Invariants, for any bytes:
//  - parsing never crashes, reads out of bounds or allocates far more than the message's size
//    (a count larger than the bytes left is an error, not a huge resize);
//  - a list that parses re-encodes to exactly the bytes it came from (one encoding per list);
// and for any list built from the bytes (structure-aware), parse(serialize(list)) == list.
#include <bit>
#include <cstdint>
#include <string>

#include "core/message.h"
#include "fuzz_check.h"

namespace {

using namespace korovod;

bool same_double(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

bool same(const Request& a, const Request& b) {
  return a.request_rank == b.request_rank && a.type == b.type && a.dtype == b.dtype &&
         a.name == b.name && a.root_rank == b.root_rank && a.device == b.device &&
         a.shape == b.shape && same_double(a.prescale, b.prescale) &&
         same_double(a.postscale, b.postscale) && a.op == b.op && a.group_id == b.group_id &&
         a.group_size == b.group_size;
}

bool same(const Response& a, const Response& b) {
  return a.type == b.type && a.names == b.names && a.dtype == b.dtype && a.error == b.error &&
         a.device == b.device && a.sizes == b.sizes && a.shapes == b.shapes &&
         same_double(a.prescale, b.prescale) && same_double(a.postscale, b.postscale) &&
         a.op == b.op && a.root_rank == b.root_rank && a.last_joined_rank == b.last_joined_rank;
}

bool same(const RequestList& a, const RequestList& b) {
  if (a.shutdown != b.shutdown || a.requests.size() != b.requests.size()) return false;
  for (size_t i = 0; i < a.requests.size(); ++i)
    if (!same(a.requests[i], b.requests[i])) return false;
  return true;
}

bool same(const ResponseList& a, const ResponseList& b) {
  if (a.shutdown != b.shutdown || a.joined_count != b.joined_count ||
      a.responses.size() != b.responses.size())
    return false;
  for (size_t i = 0; i < a.responses.size(); ++i)
    if (!same(a.responses[i], b.responses[i])) return false;
  return true;
}

std::vector<int64_t> i64s(fuzz::Bytes& in, size_t max) {
  std::vector<int64_t> v(in.count(max));
  for (auto& x : v) x = in.pod<int64_t>();
  return v;
}

RequestList request_list(fuzz::Bytes& in) {
  RequestList list;
  list.shutdown = in.pod<uint8_t>() & 1;
  list.requests.resize(in.count(8));
  for (auto& r : list.requests) {
    r.request_rank = in.pod<int32_t>();
    r.type = static_cast<RequestType>(in.pod<int32_t>());
    r.dtype = static_cast<DataType>(in.pod<int32_t>());
    r.name = in.str(64);
    r.root_rank = in.pod<int32_t>();
    r.device = in.pod<int32_t>();
    r.shape = i64s(in, 6);
    r.prescale = in.pod<double>();
    r.postscale = in.pod<double>();
    r.op = static_cast<ReduceOp>(in.pod<int32_t>());
    r.group_id = in.pod<int32_t>();
    r.group_size = in.pod<int32_t>();
  }
  return list;
}

ResponseList response_list(fuzz::Bytes& in) {
  ResponseList list;
  list.shutdown = in.pod<uint8_t>() & 1;
  list.joined_count = in.pod<int32_t>();
  list.responses.resize(in.count(8));
  for (auto& r : list.responses) {
    r.type = static_cast<ResponseType>(in.pod<int32_t>());
    r.names.resize(in.count(4));
    for (auto& n : r.names) n = in.str(32);
    r.dtype = static_cast<DataType>(in.pod<int32_t>());
    r.error = in.str(32);
    r.device = in.pod<int32_t>();
    r.sizes = i64s(in, 6);
    r.shapes.resize(in.count(4));
    for (auto& s : r.shapes) s = i64s(in, 4);
    r.prescale = in.pod<double>();
    r.postscale = in.pod<double>();
    r.op = static_cast<ReduceOp>(in.pod<int32_t>());
    r.root_rank = in.pod<int32_t>();
    r.last_joined_rank = in.pod<int32_t>();
  }
  return list;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);

  // The bytes as a message off the wire.
  if (const auto requests = parse_request_list(bytes); requests.is_ok())
    FUZZ_CHECK(serialize(*requests) == bytes, "request list re-encodes differently: " + fuzz::excerpt(bytes));
  if (const auto responses = parse_response_list(bytes); responses.is_ok())
    FUZZ_CHECK(serialize(*responses) == bytes, "response list re-encodes differently: " + fuzz::excerpt(bytes));

  // The bytes as the fields of a message: decode(encode(x)) == x.
  fuzz::Bytes in(data, size);
  const RequestList requests = request_list(in);
  const auto requests_back = parse_request_list(serialize(requests));
  FUZZ_CHECK(requests_back.is_ok(), "a serialized request list does not parse: " +
                                        requests_back.status().message());
  FUZZ_CHECK(same(*requests_back, requests), "request list changed in a round trip");
  const ResponseList responses = response_list(in);
  const auto responses_back = parse_response_list(serialize(responses));
  FUZZ_CHECK(responses_back.is_ok(), "a serialized response list does not parse: " +
                                         responses_back.status().message());
  FUZZ_CHECK(same(*responses_back, responses), "response list changed in a round trip");
  return 0;
}
