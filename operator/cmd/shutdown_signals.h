#pragma once
// SIGINT and SIGTERM are taken by one thread of each command (sigwait, sigtimedwait), so they are
// blocked before any other thread starts: threads inherit the mask, and none of them may take
// the signal instead. SIGPIPE is ignored: a peer that went away shows as write()'s error.
#include <pthread.h>

#include <csignal>

namespace operator_cmd {

inline sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

inline sigset_t block_shutdown_signals() {
  sigset_t set = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return set;
}

}  // namespace operator_cmd
