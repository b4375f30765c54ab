// Starting one child process the way korovodrun runs a rank (os/spawn.h does the starting): in a
// process group of its own (so ending it reaches everything it started), stdout and stderr on
// pipes (for the prefixed console), stdin from /dev/null or a pipe korovodrun holds (an ssh rank:
// closing it tells the remote side to end), and SIGTERM when korovodrun dies without cleaning up.
#pragma once

#include <string>
#include <vector>

#include "korovod/config.h"
#include "os/spawn.h"

namespace korovod::launcher {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up on env's PATH
  EnvMap env;                     // the child's whole environment
  bool stdin_pipe = false;        // else /dev/null
  std::string stdin_data;         // with stdin_pipe: written to it at once (an ssh rank's secret line)
};

// Forks and execs (an exec failure shows on the child's stderr, "korovodrun: cannot execute
// ...", and it exits 127); a program not on PATH is an error here.
Result<os::Child> spawn_process(const ProcessSpec& spec);

// Runs argv to the end and returns its stdout and stderr together (for `mpirun --version`), or
// its stdout alone when !include_stderr (a discovery script's hosts); a nonzero exit is an error
// with both.
Result<std::string> capture_output(const ProcessSpec& spec, bool include_stderr = true);

}  // namespace korovod::launcher
