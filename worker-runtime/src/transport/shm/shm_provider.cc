#include "transport/shm/shm_provider.h"

#include <fmt/format.h>
#include <unistd.h>

#include "transport/common/host_groups.h"
#include "transport/shm/shm_backend.h"

namespace korovod::shm {
namespace {

// One step of the rendezvous: every rank reports its status, so all ranks see the same outcome
// and take the same branch (no rank left waiting in a collective).
Result<std::vector<std::string>> agree(ControlChannel& ctl, const Status& mine, const std::string& payload,
                                       const std::vector<int>& global_ranks) {
  return korovod::agree(ctl, mine, payload, "shared-memory setup", global_ranks);
}

}  // namespace

Result<std::unique_ptr<Backend>> ShmBackendProvider::create_backend(const std::vector<int>& global_ranks, int set_id) {
  Result<std::unique_ptr<ControlChannel>> control = transport_->create_control(global_ranks, set_id);
  if (!control.is_ok()) return control.status();
  ControlChannel& ctl = **control;
  const pid_t pid = getpid();

  Result<std::vector<std::string>> hosts = allgather_lines(ctl, fmt::format("{} {}", pid, machine_id_));
  if (!hosts.is_ok()) return hosts.status();
  std::vector<pid_t> pids;
  bool one_host = true;
  for (const std::string& line : *hosts) {
    pids.push_back(static_cast<pid_t>(std::stol(line.substr(0, line.find(' ')))));
    one_host = one_host && line.substr(line.find(' ')) == hosts->front().substr(hosts->front().find(' '));
  }
  if (!one_host) return std::unique_ptr<Backend>(std::make_unique<ShmBackend>(nullptr));

  // The name carries the pid, set id and a per-provider count: unique on the host without any
  // coordination, and traceable to the job if it ever leaks.
  const std::string name = fmt::format("/korovod-{}-s{}-{}", pid, set_id, created_++);
  Result<Segment> own = Segment::create(name, geometry_.segment_bytes());
  Result<std::vector<std::string>> names = agree(ctl, own.status(), name, global_ranks);
  auto give_up = [&](const Status& why) -> Result<std::unique_ptr<Backend>> {
    if (forced_) return why;
    return std::unique_ptr<Backend>(std::make_unique<ShmBackend>(nullptr));
  };
  if (!names.is_ok()) return give_up(names.status());

  std::vector<Segment> segments;
  Status mapped = Status::ok();
  for (int r = 0; r < ctl.size(); ++r) {
    if (r == ctl.rank()) {
      segments.push_back(std::move(own).value());
      continue;
    }
    Result<Segment> peer = Segment::open((*names)[r], geometry_.segment_bytes());
    if (!peer.is_ok()) {
      mapped = peer.status();
      break;
    }
    segments.push_back(std::move(peer).value());
  }
  // Everyone has mapped everything (or someone failed): the names can go now, so a crash from
  // here on leaves nothing in /dev/shm.
  Result<std::vector<std::string>> done = agree(ctl, mapped, "mapped", global_ranks);
  if (static_cast<int>(segments.size()) > ctl.rank()) segments[ctl.rank()].unlink();  // else `own` unlinks
  if (!done.is_ok()) return give_up(done.status());
  std::vector<std::string> rank_names;
  for (int r : global_ranks) rank_names.push_back(transport_->rank_name(r));
  auto group = std::make_unique<Group>(ctl.rank(), std::move(segments), std::move(pids), geometry_,
                                       std::move(rank_names), env_);
  return std::unique_ptr<Backend>(std::make_unique<ShmBackend>(std::move(group)));
}

Geometry geometry_from(const Config& config) {
  Geometry g;
  g.slot_bytes = static_cast<size_t>(config.shm_slot_bytes);
  g.slots = config.shm_slots;
  g.wait_timeout_seconds = config.collective_timeout_seconds;
  g.streaming_bytes = static_cast<size_t>(config.shm_streaming_bytes);
  g.slot_stores = config.shm_slot_stores == "cached"      ? SlotStores::kCached
                  : config.shm_slot_stores == "streaming" ? SlotStores::kStreaming
                                                          : SlotStores::kAuto;
  return g;
}

}  // namespace korovod::shm
