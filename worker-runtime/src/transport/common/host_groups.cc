#include "transport/common/host_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>

namespace korovod {

std::optional<HostGroups> host_groups(const std::vector<std::string>& hosts, const std::vector<int>& global_ranks,
                                      int me) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> members;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (members.count(hosts[i]) == 0) order.push_back(hosts[i]);
    members[hosts[i]].push_back(global_ranks[i]);
  }
  const size_t local_size = members[hosts[me]].size();
  for (const auto& [host, ranks] : members) {
    if (ranks.size() != local_size) return std::nullopt;
  }
  if (order.size() < 2 || local_size < 2) return std::nullopt;
  HostGroups g;
  g.local = members[hosts[me]];
  const size_t index = static_cast<size_t>(std::find(g.local.begin(), g.local.end(), global_ranks[me]) - g.local.begin());
  for (const std::string& h : order) g.cross.push_back(members[h][index]);
  return g;
}

Result<std::vector<std::string>> allgather_lines(ControlChannel& ctl, const std::string& mine) {
  std::string line = mine;
  std::replace(line.begin(), line.end(), '\n', ' ');
  Result<std::vector<std::string>> gathered = ctl.gather_to_root(line);
  if (!gathered.is_ok()) return gathered.status();
  std::string joined;
  for (const std::string& s : *gathered) joined += s + "\n";
  KOROVOD_RETURN_IF_ERROR(ctl.broadcast_from_root(joined));
  std::vector<std::string> out;
  std::istringstream in(joined);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  if (static_cast<int>(out.size()) != ctl.size()) return Status::unknown("line exchange over the control plane: bad reply");
  return out;
}

Result<std::vector<std::string>> agree(ControlChannel& ctl, const Status& mine, const std::string& payload,
                                       const std::string& what, const std::vector<int>& global_ranks) {
  Result<std::vector<std::string>> all = allgather_lines(ctl, mine.is_ok() ? "ok " + payload : "err " + mine.message());
  if (!all.is_ok()) return all.status();
  std::vector<std::string> payloads;
  for (size_t r = 0; r < all->size(); ++r) {
    const std::string& line = (*all)[r];
    if (line.rfind("ok ", 0) != 0) {
      const int rank = r < global_ranks.size() ? global_ranks[r] : static_cast<int>(r);
      return Status::unknown(fmt::format("{} failed on rank {}: {}", what, rank, line.substr(4)));
    }
    payloads.push_back(line.substr(3));
  }
  return payloads;
}

}  // namespace korovod
