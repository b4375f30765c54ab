#include "script_discovery.h"

#include <fmt/format.h>

#include "child_process.h"

namespace korovod::launcher {

Result<std::vector<HostSlots>> ScriptDiscovery::discover() {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", script_};
  spec.env = env_;
  Result<std::string> out = capture_output(spec, /*include_stderr=*/false);
  if (!out.is_ok()) {
    return Status::unknown(fmt::format("host discovery script {:?} failed: {}", script_, out.status().message()));
  }
  return parse_discovery_output(*out, default_slots_);
}

}  // namespace korovod::launcher
