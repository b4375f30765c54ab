// Test helpers for korovodrun's process tests: processes found by a marker in their command line
// (what the supervisor records: tools/korovodrun/testing/recording_sink.h).
#pragma once

#include <string>
#include <vector>

namespace korovod::launcher::testing {

// Live (not zombie) processes whose command line contains `marker`.
std::vector<int> processes_with(const std::string& marker);

// A marker no other test run shares ("korovodrun-test-<pid>-<clock ticks>").
std::string unique_marker();

}  // namespace korovod::launcher::testing
