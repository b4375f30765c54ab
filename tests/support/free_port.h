// A TCP port on 127.0.0.1 for a server a test starts (a rendezvous store, sshd, an operator's
// metrics endpoint), chosen as tests/cluster/testcluster and tests/python/shared/free_port.py
// choose theirs: at random below the kernel's ephemeral range (net.ipv4.ip_local_port_range).
// Binding port 0 and releasing it hands out a port from that range, where the next outgoing
// connection of any process, or another test's bind to port 0, takes it before the server binds
// it. Below the range only another test drawing the same port can, about one chance in 20,000
// per draw; docs/testing.md, "Ports for the jobs a test starts".
//
// Header-only, for every test binary (cmake/KorovodTesting.cmake adds tests/support to their
// include path); test code only.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>

namespace korovod::test_support {

// The lowest port of the kernel's ephemeral range (32768 when it cannot be read or is odd).
inline int ephemeral_low(const std::string& range_file = "/proc/sys/net/ipv4/ip_local_port_range") {
  std::ifstream in(range_file);
  int low = 0;
  if (!(in >> low) || low <= 12000) return 32768;
  return low;
}

// True when nothing listens or lingers (TIME_WAIT) on 127.0.0.1:port: no SO_REUSEADDR.
inline bool port_is_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// A free port drawn at random from [10000, ephemeral_low()); throws when 4000 draws found none.
inline int free_port() {
  const int low = ephemeral_low();
  std::mt19937 draw(std::random_device{}());
  std::uniform_int_distribution<int> port_in(10000, low - 1);
  for (int i = 0; i < 4000; ++i) {
    const int port = port_in(draw);
    if (port_is_free(port)) return port;
  }
  throw std::runtime_error("free_port: no free port in 10000-" + std::to_string(low - 1));
}

}  // namespace korovod::test_support
