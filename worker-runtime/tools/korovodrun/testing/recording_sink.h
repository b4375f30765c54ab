// Test helper for korovodrun: an OutputSink that records what the prefixer or the supervisor
// wrote, for the unit tests beside the code and the process tests (../../../tests/korovodrun).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "line_prefixer.h"

namespace korovod::launcher::testing {

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
