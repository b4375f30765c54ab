// Test helpers for korovodrun: processes found by a marker in their command line, and an
// OutputSink that records what the supervisor wrote.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "line_prefixer.h"

namespace korovod::launcher::testing {

// Live (not zombie) processes whose command line contains `marker`.
std::vector<int> processes_with(const std::string& marker);

// A marker no other test run shares ("korovodrun-test-<pid>-<clock ticks>").
std::string unique_marker();

class RecordingSink : public OutputSink {
 public:
  void write(Stream stream, std::string_view lines) override;
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  // Each write() call, in order: whole-line writes are what keeps ranks from mixing mid-line.
  const std::vector<std::pair<Stream, std::string>>& writes() const { return writes_; }

 private:
  std::string out_, err_;
  std::vector<std::pair<Stream, std::string>> writes_;
};

}  // namespace korovod::launcher::testing
