#include "frame.h"

#include <fmt/format.h>

namespace korovod::agent {
namespace {

bool known_type(char type) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::kCommand:
    case FrameType::kStdin:
    case FrameType::kStdinEnd:
    case FrameType::kStdout:
    case FrameType::kStderr:
    case FrameType::kExit:
      return true;
  }
  return false;
}

void append_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

uint32_t read_u32(std::string_view in) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

}  // namespace

std::string encode_frame(FrameType type, std::string_view data) {
  std::string out;
  out.reserve(kFrameHeaderBytes + data.size());
  out.push_back(static_cast<char>(type));
  append_u32(out, static_cast<uint32_t>(data.size()));
  out.append(data);
  return out;
}

std::string encode_exit_frame(int exit_code) {
  std::string code;
  append_u32(code, static_cast<uint32_t>(exit_code));
  return encode_frame(FrameType::kExit, code);
}

Result<int> exit_code_of(const Frame& frame) {
  if (frame.type != FrameType::kExit || frame.data.size() != 4) {
    return Status::unknown(fmt::format("an exit frame of {} bytes, 4 expected", frame.data.size()));
  }
  return static_cast<int>(read_u32(frame.data));
}

Result<std::optional<Frame>> FrameDecoder::next() {
  const std::string_view rest = std::string_view(buffer_).substr(start_);
  if (rest.size() < kFrameHeaderBytes) return std::optional<Frame>();
  if (!known_type(rest[0])) {
    return Status::unknown(fmt::format("a frame of unknown type 0x{:02x} (not a korovod-agent peer?)",
                                       static_cast<uint8_t>(rest[0])));
  }
  const uint32_t length = read_u32(rest.substr(1));
  if (length > kMaxFrameBytes) {
    return Status::unknown(fmt::format("a frame of {} bytes, more than the {} allowed", length, kMaxFrameBytes));
  }
  if (rest.size() < kFrameHeaderBytes + length) return std::optional<Frame>();
  Frame frame{static_cast<FrameType>(rest[0]), std::string(rest.substr(kFrameHeaderBytes, length))};
  start_ += kFrameHeaderBytes + length;
  if (start_ == buffer_.size() || start_ > (size_t{1} << 16)) {  // keep the buffer from growing without end
    buffer_.erase(0, start_);
    start_ = 0;
  }
  return std::optional<Frame>(std::move(frame));
}

}  // namespace korovod::agent
