// korovod-agent's wire protocol after the job-secret handshake (transport/tcp/auth.h, purpose
// "agent", empty payload). Every message is a frame:
//
//   type (1 byte) | length (4 bytes, big endian) | data (length bytes, at most kMaxFrameBytes)
//
//   client -> agent  'C' the command for /bin/sh -c (exactly one, the first frame)
//                    'I' bytes for the command's stdin
//                    'i' end of stdin (length 0): the agent closes the command's stdin
//   agent -> client  'O' bytes the command wrote to stdout
//                    'E' bytes the command wrote to stderr
//                    'X' the command's exit: 4 bytes, big endian, its exit code or 128 + signal;
//                        the last frame, then the agent closes the connection
//
// A frame of another type, or one longer than kMaxFrameBytes, is a protocol error: the reader
// closes the connection. docs/agent.md describes the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "korovod/status.h"

namespace korovod::agent {

enum class FrameType : char {
  kCommand = 'C',
  kStdin = 'I',
  kStdinEnd = 'i',
  kStdout = 'O',
  kStderr = 'E',
  kExit = 'X',
};

inline constexpr size_t kFrameHeaderBytes = 5;
inline constexpr size_t kMaxFrameBytes = size_t{1} << 20;

struct Frame {
  FrameType type = FrameType::kExit;
  std::string data;
};

// The bytes of one frame; `data` must be at most kMaxFrameBytes (callers send less).
std::string encode_frame(FrameType type, std::string_view data);
std::string encode_exit_frame(int exit_code);
// The exit code an 'X' frame carries (an error for a frame of another size).
Result<int> exit_code_of(const Frame& frame);

// Frames out of a byte stream that arrives in pieces.
class FrameDecoder {
 public:
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next whole frame, nullopt until one has arrived, or an error (unknown type, oversize)
  // that stays: the stream cannot be read past it.
  Result<std::optional<Frame>> next();
  size_t buffered_bytes() const { return buffer_.size(); }

 private:
  std::string buffer_;
  size_t start_ = 0;  // where the next frame begins in buffer_
};

}  // namespace korovod::agent
