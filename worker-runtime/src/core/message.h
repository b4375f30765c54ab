// Negotiation messages (Horovod's Request/Response) and their byte encoding for the control
// plane. Ranks inside messages are process-set ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "korovod/status.h"
#include "korovod/types.h"

namespace korovod {

struct Request {
  int32_t request_rank = 0;
  RequestType type = RequestType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  std::string name;
  int32_t root_rank = 0;
  int32_t device = kCpuDevice;
  std::vector<int64_t> shape;
  double prescale = 1.0;
  double postscale = 1.0;
  ReduceOp op = ReduceOp::kSum;
  int32_t group_id = -1;   // -1: not grouped
  int32_t group_size = 0;

  int64_t numel() const;
};

struct RequestList {
  std::vector<Request> requests;
  bool shutdown = false;
};

struct Response {
  ResponseType type = ResponseType::kAllreduce;
  std::vector<std::string> names;          // several once fused
  DataType dtype = DataType::kFloat32;
  std::string error;
  int32_t device = kCpuDevice;
  // Per tensor: numel; allgather: per tensor `size` entries of dim0, one per set rank.
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> shapes;  // per tensor, as the first reporting rank sent it
  double prescale = 1.0;
  double postscale = 1.0;
  ReduceOp op = ReduceOp::kSum;
  int32_t root_rank = 0;
  int32_t last_joined_rank = -1;
};

// A response as a cycle hands it on: cached responses are shared with the response cache, not
// copied per cycle.
using ResponsePtr = std::shared_ptr<const Response>;

struct ResponseList {
  std::vector<Response> responses;
  bool shutdown = false;
  int32_t joined_count = 0;  // ranks joined when this list was built (no caching while > 0)
};

std::string serialize(const RequestList& list);
std::string serialize(const ResponseList& list);
Result<RequestList> parse_request_list(const std::string& bytes);
Result<ResponseList> parse_response_list(const std::string& bytes);

std::string shape_string(const std::vector<int64_t>& shape);  // "[2, 3]"

}  // namespace korovod
