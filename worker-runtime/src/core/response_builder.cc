#include "core/response_builder.h"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>

#include "kernels/kernels.h"

namespace korovod {
namespace {

using Requests = std::vector<std::optional<Request>>;
using Describe = std::function<std::string(const Request&)>;

// Groups the present ranks by `describe(request)`; "" when all agree, else
// "ranks [0, 2] sent float32, ranks [1] sent int32".
std::string disagreement(const Requests& by_rank, const std::vector<int>& global_ranks,
                         const Describe& describe) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;  // first-seen order
  for (size_t r = 0; r < by_rank.size(); ++r) {
    if (!by_rank[r]) continue;
    std::string value = describe(*by_rank[r]);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == value; });
    if (it == groups.end()) groups.push_back({value, {global_ranks[r]}});
    else it->second.push_back(global_ranks[r]);
  }
  if (groups.size() <= 1) return "";
  std::string out;
  for (const auto& [value, ranks] : groups) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} sent {}", rank_list(ranks), value);
  }
  return out;
}

std::string trailing_dims(const Request& r) {
  if (r.shape.empty()) return "a scalar";
  return shape_string(std::vector<int64_t>(r.shape.begin() + 1, r.shape.end())) + " after dim 0";
}

struct Check {
  const char* what;
  Describe describe;
};

std::vector<Check> checks_for(RequestType type) {
  std::vector<Check> checks = {
      {"operations", [](const Request& r) { return std::string(request_type_name(r.type)); }},
      {"data types", [](const Request& r) { return std::string(dtype_name(r.dtype)); }},
      // CPU vs GPU only, as Horovod: with one rank per GPU, rank r's tensors are on its own GPU r.
      {"devices", [](const Request& r) { return std::string(r.device < 0 ? "CPU" : "GPU"); }},
  };
  if (type == RequestType::kAllreduce || type == RequestType::kReducescatter) {
    checks.push_back({"reduce ops", [](const Request& r) { return std::string(reduce_op_name(r.op)); }});
    checks.push_back({"scale factors", [](const Request& r) {
                        return fmt::format("prescale {} postscale {}", r.prescale, r.postscale); }});
  }
  if (type == RequestType::kBroadcast) {
    checks.push_back({"root ranks", [](const Request& r) { return fmt::format("root {}", r.root_rank); }});
  }
  if (type == RequestType::kAllgather || type == RequestType::kAlltoall) {
    checks.push_back({"shapes", trailing_dims});
  } else if (type != RequestType::kBarrier && type != RequestType::kJoin) {
    checks.push_back({"shapes", [](const Request& r) { return shape_string(r.shape); }});
  }
  return checks;
}

// Why Adasum (algorithms/adasum.cc) cannot reduce this tensor among `set_size` ranks; "" when it can.
std::string adasum_refusal(const Request& r, size_t set_size) {
  if (r.type != RequestType::kAllreduce) {
    return fmt::format("Adasum is an allreduce op; {} does not take it.", request_type_name(r.type));
  }
  if (!kernels::adasum_supports(r.dtype)) {
    return fmt::format("Adasum reduces float16, bfloat16, float32 and float64 tensors, not {}.", dtype_name(r.dtype));
  }
  if ((set_size & (set_size - 1)) != 0) {
    return fmt::format("Adasum needs a power-of-2 number of ranks, as Horovod's does; this process set has {}.",
                       set_size);
  }
  return {};
}

Response success_response(const Request& first, const Requests& by_rank) {
  Response resp;
  resp.type = static_cast<ResponseType>(first.type);
  resp.names = {first.name};
  resp.dtype = first.dtype;
  resp.device = first.device;
  resp.shapes = {first.shape};
  resp.prescale = first.prescale;
  resp.postscale = first.postscale;
  resp.op = first.op;
  resp.root_rank = first.root_rank;
  if (first.type == RequestType::kAllgather) {
    for (const auto& r : by_rank) resp.sizes.push_back(r ? r->shape[0] : 0);
  } else {
    resp.sizes = {first.numel()};
  }
  return resp;
}

}  // namespace

std::string rank_list(const std::vector<int>& ranks) {
  return fmt::format("ranks [{}]", fmt::join(ranks, ", "));
}

Response error_response(const std::string& name, std::string message) {
  Response resp;
  resp.type = ResponseType::kError;
  resp.names = {name};
  resp.error = std::move(message);
  return resp;
}

Response build_response(const std::string& name, const Requests& by_rank,
                        const std::vector<int>& global_ranks) {
  const Request* first = nullptr;
  std::vector<int> joined;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    if (by_rank[r] && !first) first = &*by_rank[r];
    if (!by_rank[r]) joined.push_back(global_ranks[r]);
  }
  if (!first) return error_response(name, fmt::format("no rank sent tensor '{}'", name));
  for (const Check& check : checks_for(first->type)) {
    std::string diff = disagreement(by_rank, global_ranks, check.describe);
    if (!diff.empty()) {
      return error_response(name, fmt::format("Mismatched {} for tensor '{}': {}.", check.what, name, diff));
    }
  }
  const RequestType type = first->type;
  if ((type == RequestType::kAllgather || type == RequestType::kReducescatter) && first->shape.empty()) {
    return error_response(name, fmt::format("Tensor '{}': {} of a scalar is not supported.", name,
                                            request_type_name(type)));
  }
  if (first->op == ReduceOp::kAdasum && (type == RequestType::kAllreduce || type == RequestType::kReducescatter)) {
    std::string why = adasum_refusal(*first, by_rank.size());
    if (!why.empty()) return error_response(name, fmt::format("Tensor '{}': {}", name, why));
  }
  // Horovod: of the collectives, only allreduce runs while ranks have joined (they contribute
  // zeros); the others fail on the ranks that submitted them (its controller, ConstructResponse).
  if (!joined.empty() && (type == RequestType::kAllgather || type == RequestType::kBroadcast ||
                          type == RequestType::kAlltoall || type == RequestType::kReducescatter ||
                          type == RequestType::kBarrier)) {
    return error_response(name, fmt::format("Tensor '{}': {} is not supported while {} have joined.",
                                            name, request_type_name(type), rank_list(joined)));
  }
  return success_response(*first, by_rank);
}

}  // namespace korovod
