// Starting one child process the way korovodrun runs a rank: in a process group of its own (so
// ending it reaches everything it started), stdout and stderr on pipes (for the prefixed
// console), stdin from /dev/null or a pipe korovodrun holds (an ssh rank: closing it tells the
// remote side to end), and SIGTERM when korovodrun dies without cleaning up.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "korovod/config.h"
#include "transport/tcp/socket.h"

namespace korovod::launcher {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up on env's PATH
  EnvMap env;                     // the child's whole environment
  bool stdin_pipe = false;        // else /dev/null
  std::string stdin_data;         // with stdin_pipe: written to it at once (an ssh rank's secret line)
};

struct ChildProcess {
  pid_t pid = -1;     // also the process group id
  tcp::Fd out, err;   // read ends
  tcp::Fd in;         // write end when stdin_pipe
};

// `name` resolved against a PATH value ("" when not found); names with '/' pass through.
std::string find_in_path(const std::string& name, const std::string& path);

// argv and envp for execve; the pointers point into the struct's own strings.
struct ExecArrays {
  ExecArrays(const std::vector<std::string>& args, const EnvMap& env);
  ExecArrays(const ExecArrays&) = delete;
  ExecArrays& operator=(const ExecArrays&) = delete;
  std::vector<std::string> words;  // the arguments, then NAME=VALUE strings
  std::vector<char*> argv, envp;   // each ends with nullptr
};

// Forks and execs. An exec failure inside the child shows on its stderr and exits 127.
Result<ChildProcess> spawn_process(const ProcessSpec& spec);

// Runs argv to the end and returns its stdout and stderr together (for `mpirun --version`), or
// its stdout alone when !include_stderr (a discovery script's hosts); a nonzero exit is an error
// with both.
Result<std::string> capture_output(const ProcessSpec& spec, bool include_stderr = true);

// An exit status from waitpid as a shell reports it: the code, or 128 + the signal number.
int exit_code_from_wait_status(int status);

}  // namespace korovod::launcher
