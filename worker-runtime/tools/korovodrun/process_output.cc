#include "process_output.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <utility>

namespace korovod::launcher {

void ProcessOutput::read(os::ProcessGroup& group, Stream stream) {
  os::Fd& fd = stream == Stream::kStdout ? group.out() : group.err();
  LinePrefixer& lines = stream == Stream::kStdout ? out_ : err_;
  char buf[65536];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    lines.finish();
    fd.reset();
    return;
  }
  lines.feed(std::string_view(buf, static_cast<size_t>(n)));
}

void ProcessOutput::close(os::ProcessGroup& group) {
  if (group.out().valid()) out_.finish();
  if (group.err().valid()) err_.finish();
  group.out().reset();
  group.err().reset();
}

void poll_outputs(int signal_fd, const std::vector<WatchedOutput>& watched, int timeout_ms) {
  std::vector<pollfd> fds{{signal_fd, POLLIN, 0}};
  std::vector<std::pair<const WatchedOutput*, Stream>> owners{{nullptr, Stream::kStdout}};
  for (const WatchedOutput& w : watched) {
    for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
      const os::Fd& fd = stream == Stream::kStdout ? w.group->out() : w.group->err();
      if (!fd.valid()) continue;
      fds.push_back({fd.get(), POLLIN, 0});
      owners.push_back({&w, stream});
    }
  }
  if (::poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  for (size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents != 0) owners[i].first->output->read(*owners[i].first->group, owners[i].second);
  }
}

}  // namespace korovod::launcher
