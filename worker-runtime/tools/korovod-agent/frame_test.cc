// The frames of korovod-agent's protocol (frame.h): encoding, decoding from pieces, refusals.
#include "frame.h"

#include <gtest/gtest.h>

#include <string>

namespace korovod::agent {
namespace {

Frame next_frame(FrameDecoder& d) {
  Result<std::optional<Frame>> f = d.next();
  EXPECT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_TRUE(f.is_ok() && f->has_value());
  return f.is_ok() && f->has_value() ? **f : Frame{};
}

TEST(Frame, HeaderIsTypeAndBigEndianLength) {
  const std::string bytes = encode_frame(FrameType::kStdout, "hello");
  EXPECT_EQ(bytes, std::string("O\0\0\0\x05hello", 10));
  EXPECT_EQ(encode_frame(FrameType::kStdinEnd, ""), std::string("i\0\0\0\0", 5));
  EXPECT_EQ(encode_exit_frame(7), std::string("X\0\0\0\x04\0\0\0\x07", 9));
  EXPECT_EQ(encode_frame(FrameType::kCommand, std::string(300, 'a')).substr(0, 5), std::string("C\0\0\x01\x2c", 5));
}

TEST(Frame, DecodesFramesArrivingByteByByte) {
  const std::string stream = encode_frame(FrameType::kCommand, "echo hi") + encode_frame(FrameType::kStdin, "") +
                             encode_frame(FrameType::kStdinEnd, "") + encode_exit_frame(128 + 15);
  FrameDecoder d;
  std::vector<Frame> frames;
  for (char c : stream) {
    d.feed(std::string_view(&c, 1));
    Result<std::optional<Frame>> f = d.next();
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    if (f->has_value()) frames.push_back(**f);
  }
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].type, FrameType::kCommand);
  EXPECT_EQ(frames[0].data, "echo hi");
  EXPECT_EQ(frames[1].type, FrameType::kStdin);
  EXPECT_EQ(frames[1].data, "");
  EXPECT_EQ(frames[2].type, FrameType::kStdinEnd);
  Result<int> code = exit_code_of(frames[3]);
  ASSERT_TRUE(code.is_ok());
  EXPECT_EQ(*code, 143);
  EXPECT_EQ(d.buffered_bytes(), 0u);
}

TEST(Frame, DecodesSeveralFramesFromOnePiece) {
  FrameDecoder d;
  d.feed(encode_frame(FrameType::kStdout, "a") + encode_frame(FrameType::kStderr, std::string(70000, 'b')) +
         encode_frame(FrameType::kStdout, "c").substr(0, 3));
  EXPECT_EQ(next_frame(d).data, "a");
  const Frame big = next_frame(d);
  EXPECT_EQ(big.type, FrameType::kStderr);
  EXPECT_EQ(big.data.size(), 70000u);
  Result<std::optional<Frame>> partial = d.next();
  ASSERT_TRUE(partial.is_ok());
  EXPECT_FALSE(partial->has_value());
  d.feed(encode_frame(FrameType::kStdout, "c").substr(3));
  EXPECT_EQ(next_frame(d).data, "c");
}

TEST(Frame, TheLargestFramePasses) {
  FrameDecoder d;
  d.feed(encode_frame(FrameType::kStdin, std::string(kMaxFrameBytes, 'x')));
  EXPECT_EQ(next_frame(d).data.size(), kMaxFrameBytes);
}

TEST(Frame, OversizeFrameIsRefusedFromItsHeaderAlone) {
  FrameDecoder d;
  d.feed(std::string("O\0\x10\0\x01", 5));  // 1 MiB + 1, no data yet
  Result<std::optional<Frame>> f = d.next();
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("1048577 bytes"), std::string::npos) << f.status().message();
}

TEST(Frame, UnknownTypeIsRefused) {
  FrameDecoder d;
  d.feed("SSH-2.0-OpenSSH_9.2\r\n");
  Result<std::optional<Frame>> f = d.next();
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("unknown type 0x53"), std::string::npos) << f.status().message();
}

TEST(Frame, ExitFrameOfWrongSizeIsAnError) {
  EXPECT_FALSE(exit_code_of(Frame{FrameType::kExit, "abc"}).is_ok());
  EXPECT_FALSE(exit_code_of(Frame{FrameType::kStdout, "abcd"}).is_ok());
}

}  // namespace
}  // namespace korovod::agent
