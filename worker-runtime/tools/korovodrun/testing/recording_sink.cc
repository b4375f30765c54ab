#include "testing/recording_sink.h"

namespace korovod::launcher::testing {

void RecordingSink::write(Stream stream, std::string_view lines) {
  (stream == Stream::kStdout ? out_ : err_).append(lines);
  writes_.emplace_back(stream, std::string(lines));
}

}  // namespace korovod::launcher::testing
