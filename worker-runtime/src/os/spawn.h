// Starting a program the way korovodrun starts a rank and local mode starts a pod's process:
// fork and execve, in a process group of its own (a signal to the group reaches everything the
// program starts), stdin from /dev/null or from a pipe the caller holds, stdout and stderr on
// pipes (one each, or one for both), and no descriptor of the caller's but those three.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "korovod/status.h"
#include "os/fd.h"

namespace korovod::os {

// `name` resolved against a PATH value ("" when not found); names with '/' pass through.
std::string find_in_path(const std::string& name, const std::string& path);

using EnvPairs = std::vector<std::pair<std::string, std::string>>;  // NAME, value (a std::map converts)

// What execve takes, built before a fork so that the child only calls execve: the program
// (argv[0] looked up on the PATH of `env`), and argv and envp ("NAME=value") as null-terminated
// arrays pointing into this object.
class ExecArrays {
 public:
  // An empty `args` and a program not found on PATH are kInvalidArgument errors naming it.
  static Result<ExecArrays> resolve(const std::vector<std::string>& args, const EnvPairs& env);
  // Moving keeps the pointers valid: the strings stay in the heap blocks the vectors hand over.
  ExecArrays(ExecArrays&&) noexcept = default;
  ExecArrays& operator=(ExecArrays&&) noexcept = default;
  ExecArrays(const ExecArrays&) = delete;
  ExecArrays& operator=(const ExecArrays&) = delete;

  const std::string& program() const { return program_; }
  char* const* argv() const { return argv_.data(); }
  char* const* envp() const { return envp_.data(); }

 private:
  ExecArrays(std::string program, const std::vector<std::string>& args, const EnvPairs& env);

  std::string program_;
  std::vector<std::string> words_;  // the arguments, then the NAME=value strings
  std::vector<char*> argv_, envp_;  // each ends with nullptr
};

struct SpawnOptions {
  bool stdin_pipe = false;        // else /dev/null
  std::string stdin_data;         // with stdin_pipe: written at once (well below 64 KiB: a line)
  bool merge_output = false;      // stderr on stdout's pipe
  int parent_death_signal = 0;    // sent to the child when the caller dies (PR_SET_PDEATHSIG); 0: none
  bool new_session = false;       // setsid() (as sshd starts a command) instead of only a new group
  std::string who = "korovod";    // names the caller in "<who>: cannot execute <program> (errno N)"
};

struct Child {
  pid_t pid = -1;  // also the id of its process group (and session, with new_session)
  Fd out;          // read end of stdout (and stderr with merge_output)
  Fd err;          // read end of stderr; invalid with merge_output
  Fd in;           // write end of stdin with stdin_pipe
};

// Forks and execs. An exec failure shows on the child's stderr, which then exits 127.
Result<Child> spawn(const ExecArrays& exec, const SpawnOptions& options);

// An exit status from waitpid as a shell reports it: the code, or 128 + the signal number.
int exit_code_from_wait_status(int status);
// Waits for `pid` to end (EINTR retried) and reaps it: its exit code.
int wait_exit_code(pid_t pid);
// For a child that leads its own group (spawn's): if it has ended, SIGKILLs whatever it left in
// its group -- before reaping it, while its pid, the group's id, cannot be reused -- then reaps
// it and returns its exit code; nullopt at once while it runs.
std::optional<int> reap_group_if_ended(pid_t pid);
// The same, waiting for it to end.
int wait_group(pid_t pid);

}  // namespace korovod::os
