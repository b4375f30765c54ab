#include "core/message.h"

#include <cstring>
#include <type_traits>

namespace korovod {
namespace {

class Writer {
 public:
  template <typename T>
  void pod(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void i64s(const std::vector<int64_t>& v) {
    pod<uint32_t>(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) pod(x);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Bounds-checked reader: a truncated or corrupt message is an error, never a crash.
class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  bool pod(T& v) {
    if (pos_ + sizeof v > in_.size()) return fail();
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }
  bool str(std::string& s) {
    uint32_t n = 0;
    if (!pod(n) || pos_ + n > in_.size()) return fail();
    s.assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool i64s(std::vector<int64_t>& v) {
    uint32_t n = 0;
    if (!pod(n) || pos_ + size_t{n} * 8 > in_.size()) return fail();
    v.resize(n);
    for (auto& x : v) pod(x);
    return true;
  }
  // A count of elements that each take at least `min_bytes`: more than the bytes left can hold
  // is corrupt, refused before anything is allocated for it (no huge resize from 5 bytes).
  bool count(uint32_t& n, size_t min_bytes) {
    if (!pod(n) || n > (in_.size() - pos_) / min_bytes) return fail();
    return true;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  bool fail() { return ok_ = false; }
  const std::string& in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// The smallest encodings (empty strings and vectors): the fixed fields and length prefixes.
constexpr size_t kMinRequestBytes = 4 * 3 + 4 + 4 * 2 + 4 + 8 * 2 + 4 * 3;   // 56
constexpr size_t kMinResponseBytes = 4 * 2 + 4 * 2 + 4 * 3 + 8 * 2 + 4 * 3;  // 56
constexpr size_t kMinStringBytes = 4, kMinVectorBytes = 4;

void write_request(Writer& w, const Request& r) {
  w.pod(r.request_rank); w.pod(r.type); w.pod(r.dtype); w.str(r.name); w.pod(r.root_rank);
  w.pod(r.device); w.i64s(r.shape); w.pod(r.prescale); w.pod(r.postscale); w.pod(r.op);
  w.pod(r.group_id); w.pod(r.group_size);
}

bool read_request(Reader& rd, Request& r) {
  return rd.pod(r.request_rank) && rd.pod(r.type) && rd.pod(r.dtype) && rd.str(r.name) &&
         rd.pod(r.root_rank) && rd.pod(r.device) && rd.i64s(r.shape) && rd.pod(r.prescale) &&
         rd.pod(r.postscale) && rd.pod(r.op) && rd.pod(r.group_id) && rd.pod(r.group_size);
}

void write_response(Writer& w, const Response& r) {
  w.pod(r.type);
  w.pod<uint32_t>(static_cast<uint32_t>(r.names.size()));
  for (const auto& n : r.names) w.str(n);
  w.pod(r.dtype); w.str(r.error); w.pod(r.device); w.i64s(r.sizes);
  w.pod<uint32_t>(static_cast<uint32_t>(r.shapes.size()));
  for (const auto& s : r.shapes) w.i64s(s);
  w.pod(r.prescale); w.pod(r.postscale); w.pod(r.op); w.pod(r.root_rank); w.pod(r.last_joined_rank);
}

bool read_response(Reader& rd, Response& r) {
  uint32_t n = 0;
  if (!rd.pod(r.type) || !rd.count(n, kMinStringBytes)) return false;
  r.names.resize(n);
  for (auto& name : r.names) if (!rd.str(name)) return false;
  if (!rd.pod(r.dtype) || !rd.str(r.error) || !rd.pod(r.device) || !rd.i64s(r.sizes) ||
      !rd.count(n, kMinVectorBytes)) {
    return false;
  }
  r.shapes.resize(n);
  for (auto& s : r.shapes) if (!rd.i64s(s)) return false;
  return rd.pod(r.prescale) && rd.pod(r.postscale) && rd.pod(r.op) && rd.pod(r.root_rank) &&
         rd.pod(r.last_joined_rank);
}

}  // namespace

int64_t Request::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string serialize(const RequestList& list) {
  Writer w;
  w.pod<uint8_t>(list.shutdown);
  w.pod<uint32_t>(static_cast<uint32_t>(list.requests.size()));
  for (const auto& r : list.requests) write_request(w, r);
  return w.take();
}

std::string serialize(const ResponseList& list) {
  Writer w;
  w.pod<uint8_t>(list.shutdown);
  w.pod(list.joined_count);
  w.pod<uint32_t>(static_cast<uint32_t>(list.responses.size()));
  for (const auto& r : list.responses) write_response(w, r);
  return w.take();
}

Result<RequestList> parse_request_list(const std::string& bytes) {
  Reader rd(bytes);
  RequestList list;
  uint8_t shutdown = 0;
  uint32_t n = 0;
  // shutdown is 0 or 1 (one encoding per list); a bad count fails the read, never an empty list.
  if (rd.pod(shutdown) && shutdown <= 1 && rd.count(n, kMinRequestBytes)) {
    list.shutdown = shutdown != 0;
    list.requests.resize(n);
    for (auto& r : list.requests) if (!read_request(rd, r)) break;
  } else {
    return Status::unknown("corrupt request list on the control plane");
  }
  if (!rd.ok() || !rd.at_end()) return Status::unknown("corrupt request list on the control plane");
  return list;
}

Result<ResponseList> parse_response_list(const std::string& bytes) {
  Reader rd(bytes);
  ResponseList list;
  uint8_t shutdown = 0;
  uint32_t n = 0;
  if (rd.pod(shutdown) && shutdown <= 1 && rd.pod(list.joined_count) && rd.count(n, kMinResponseBytes)) {
    list.shutdown = shutdown != 0;
    list.responses.resize(n);
    for (auto& r : list.responses) if (!read_response(rd, r)) break;
  } else {
    return Status::unknown("corrupt response list on the control plane");
  }
  if (!rd.ok() || !rd.at_end()) return Status::unknown("corrupt response list on the control plane");
  return list;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace korovod
