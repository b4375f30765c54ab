#include "agent_server.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <set>

#include "frame_io.h"
#include "transport/tcp/socket.h"

namespace korovod::agent {
namespace {

// The signals the server takes through a signalfd; blocked in the handlers too (SIGPIPE: a
// write to a gone peer is an error, EPIPE, not death). Children the handlers start unblock all.
sigset_t blocked_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGCHLD, SIGPIPE}) sigaddset(&set, s);
  return set;
}

os::Fd signal_fd_for(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  return os::Fd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

class Server {
 public:
  Server(const ServeOptions& options, const tcp::JobSecret& secret, os::Fd listener, os::Fd signals)
      : options_(options), secret_(secret), listener_(std::move(listener)), signals_(std::move(signals)) {}

  // Until SIGTERM / SIGINT.
  void accept_until_stopped() {
    for (;;) {
      pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {signals_.get(), POLLIN, 0}};
      if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents != 0 && take_signals()) return;
      if (fds[0].revents != 0) accept_one();
    }
  }

  void stop_handlers() {
    listener_.reset();
    for (pid_t pid : handlers_) kill(pid, SIGTERM);
    using Clock = std::chrono::steady_clock;
    const auto give_up = Clock::now() + std::chrono::seconds(options_.session.grace_seconds + 2);
    while (!handlers_.empty() && Clock::now() < give_up) {
      pollfd fd{signals_.get(), POLLIN, 0};
      (void)poll(&fd, 1, 100);
      (void)take_signals();
      reap();
    }
    for (pid_t pid : handlers_) kill(pid, SIGKILL);
  }

 private:
  // Reads the pending signals: true for a stop request.
  bool take_signals() {
    bool stop = false;
    signalfd_siginfo info;
    while (read(signals_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      if (info.ssi_signo == SIGCHLD) reap();
      if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) stop = true;
    }
    return stop;
  }

  void reap() {
    int status = 0;
    for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) handlers_.erase(pid);
  }

  void accept_one() {
    Result<os::Fd> conn = tcp::accept_waiting(listener_, tcp::SocketOptions{});
    if (!conn.is_ok()) {
      fmt::print(stderr, "korovod-agent: {}\n", conn.status().message());
      return;
    }
    if (!conn->valid()) return;
    const std::string peer = peer_address(conn->get());
    const pid_t server = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      fmt::print(stderr, "korovod-agent: cannot serve {}: fork: {}\n", peer, std::strerror(errno));
      return;
    }
    if (pid == 0) {
      // Killed outright, the server takes no handler with it: SIGTERM then, as for a stop.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != server) _exit(1);  // it died before the prctl
      listener_.reset();
      signals_.reset();
      os::Fd stop = signal_fd_for({SIGTERM, SIGINT});
      std::fflush(stderr);
      _exit(serve_connection(std::move(*conn), peer, secret_, options_.session, stop.get()));
    }
    handlers_.insert(pid);
  }

  // Constant after construction.
  const ServeOptions options_;
  const tcp::JobSecret secret_;
  // The loop's state.
  os::Fd listener_;
  os::Fd signals_;
  std::set<pid_t> handlers_;
};

}  // namespace

int serve(const ServeOptions& options, const tcp::JobSecret& secret) {
  const sigset_t blocked = blocked_signals();
  sigprocmask(SIG_BLOCK, &blocked, nullptr);
  os::Fd signals = signal_fd_for({SIGTERM, SIGINT, SIGCHLD});
  if (!signals.valid()) {
    fmt::print(stderr, "korovod-agent: signalfd: {}\n", std::strerror(errno));
    return 1;
  }
  Result<os::Fd> listener = tcp::listen_on(options.listen, options.port, tcp::SocketOptions{});
  Status ready = listener.is_ok() ? tcp::set_nonblocking(listener->get()) : listener.status();
  if (!ready.is_ok()) {
    fmt::print(stderr, "korovod-agent: cannot listen on {}:{}: {}\n", options.listen, options.port, ready.message());
    return 1;
  }
  fmt::print(stderr, "korovod-agent: listening on {}:{} (job secret required)\n", options.listen, options.port);
  std::fflush(stderr);
  Server server(options, secret, std::move(*listener), std::move(signals));
  server.accept_until_stopped();
  server.stop_handlers();
  return 0;
}

}  // namespace korovod::agent
