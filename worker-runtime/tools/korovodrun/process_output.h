// The output of a rank (supervisor.h) or of an elastic worker (worker_pool.h): the stdout and
// stderr pipes of its os::ProcessGroup, read into two line prefixers. Both loops poll the job's
// signalfd and every open pipe the same way, through poll_outputs.
#pragma once

#include <string>
#include <vector>

#include "line_prefixer.h"
#include "os/process_group.h"

namespace korovod::launcher {

class ProcessOutput {
 public:
  ProcessOutput(int rank, OutputSink& sink) : out_(rank, Stream::kStdout, sink), err_(rank, Stream::kStderr, sink) {}
  ProcessOutput(const std::string& label, OutputSink& sink)
      : out_(label, Stream::kStdout, sink), err_(label, Stream::kStderr, sink) {}

  // Reads what `stream`'s pipe of `group` holds and writes its whole lines; at end of file the
  // last line is finished and the pipe closed.
  void read(os::ProcessGroup& group, Stream stream);
  // Stops reading (the drain after the last exit is over): finishes what is open and closes it.
  void close(os::ProcessGroup& group);
  static bool open(const os::ProcessGroup& group) { return group.out().valid() || group.err().valid(); }

 private:
  LinePrefixer out_, err_;
};

struct WatchedOutput {
  os::ProcessGroup* group;
  ProcessOutput* output;
};

// One poll() over `signal_fd` and every open pipe of `watched`, for at most `timeout_ms` (-1:
// until something happens); reads the pipes that are ready. The caller then reads the signalfd.
void poll_outputs(int signal_fd, const std::vector<WatchedOutput>& watched, int timeout_ms);

}  // namespace korovod::launcher
