// The host discovery script of korovodrun --host-discovery-script (horovodrun's, runner/elastic/
// discovery.py): what it prints is parsed by launch/discovery.h.
#pragma once

#include <string>
#include <vector>

#include "korovod/config.h"
#include "launch/discovery.h"

namespace korovod::launcher {

// Runs `sh -c script` with korovodrun's environment and parses what it prints; a nonzero exit
// is an error with the script's output.
class ScriptDiscovery : public HostDiscovery {
 public:
  ScriptDiscovery(std::string script, int default_slots, EnvMap env)
      : script_(std::move(script)), default_slots_(default_slots), env_(std::move(env)) {}
  Result<std::vector<HostSlots>> discover() override;

 private:
  std::string script_;
  int default_slots_;
  EnvMap env_;
};

}  // namespace korovod::launcher
