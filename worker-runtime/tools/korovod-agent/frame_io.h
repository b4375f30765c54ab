// Frames on a socket (frame.h): sending one whole, reading what has arrived, and the bytes moved
// between the socket and the pipes of a command or of rsh's own stdio.
#pragma once

#include <string>
#include <string_view>

#include "frame.h"
#include "korovod/status.h"

namespace korovod::agent {

// Most bytes read from a pipe or stdin into one frame.
inline constexpr size_t kChunkBytes = 64 * 1024;

// Sends one frame whole, waiting while the peer does not read; an error when the connection is
// gone. `peer` names the other side.
Status send_frame(int fd, FrameType type, std::string_view data, const std::string& peer);
Status send_exit(int fd, int exit_code, const std::string& peer);

enum class ReadResult { kData, kEnd, kAgain };
// One read() of at most kChunkBytes from `fd` appended to `out`: kEnd at end of file or on an
// error (a reset connection, a broken pipe), kAgain when nothing was there (EAGAIN / EINTR).
ReadResult read_some(int fd, std::string& out);
// Writes all of `data` to a blocking `fd`; false when it cannot (the reader is gone).
bool write_all(int fd, std::string_view data);

// "a.b.c.d:port" of a connected socket's other end.
std::string peer_address(int fd);

}  // namespace korovod::agent
