// ConstructResponse: turns the requests every rank sent for one tensor into a Response, or an
// ERROR Response naming the tensor and the ranks that disagree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/message.h"

namespace korovod {

// `by_rank[r]` is set rank r's request (nullopt for a joined rank that did not send one);
// `global_ranks[r]` maps set ranks to the global ranks used in messages.
Response build_response(const std::string& name, const std::vector<std::optional<Request>>& by_rank,
                        const std::vector<int>& global_ranks);

Response error_response(const std::string& name, std::string message);

// "ranks [1, 3]" -- how every message lists ranks.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace korovod
