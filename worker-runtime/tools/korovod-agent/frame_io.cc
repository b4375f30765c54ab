#include "frame_io.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "transport/tcp/socket.h"

namespace korovod::agent {

Status send_frame(int fd, FrameType type, std::string_view data, const std::string& peer) {
  const std::string frame = encode_frame(type, data);
  return tcp::send_all(fd, frame.data(), frame.size(), tcp::Deadline(), peer);
}

Status send_exit(int fd, int exit_code, const std::string& peer) {
  const std::string frame = encode_exit_frame(exit_code);
  return tcp::send_all(fd, frame.data(), frame.size(), tcp::Deadline(), peer);
}

ReadResult read_some(int fd, std::string& out) {
  char buf[kChunkBytes];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    out.append(buf, static_cast<size_t>(n));
    return ReadResult::kData;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return ReadResult::kAgain;
  return ReadResult::kEnd;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string peer_address(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sin_family != AF_INET) return "?";
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  return fmt::format("{}:{}", ip, ntohs(addr.sin_port));
}

}  // namespace korovod::agent
