#include "line_prefixer.h"

#include <gtest/gtest.h>

#include "testing/recording_sink.h"

namespace korovod::launcher {
namespace {

using testing::RecordingSink;

TEST(LinePrefixer, PrefixesEveryLineLikeHorovodrun) {
  RecordingSink sink;
  LinePrefixer out(3, Stream::kStdout, sink), err(3, Stream::kStderr, sink);
  out.feed("hello\nworld\n");
  err.feed("oops\n");
  EXPECT_EQ(sink.out(), "[3]<stdout>:hello\n[3]<stdout>:world\n");
  EXPECT_EQ(sink.err(), "[3]<stderr>:oops\n");
}

TEST(LinePrefixer, HoldsPartialLinesUntilComplete) {
  RecordingSink sink;
  LinePrefixer out(0, Stream::kStdout, sink);
  out.feed("par");
  EXPECT_TRUE(sink.writes().empty());
  out.feed("tial\nnext");
  EXPECT_EQ(sink.out(), "[0]<stdout>:partial\n");
  out.finish();
  EXPECT_EQ(sink.out(), "[0]<stdout>:partial\n[0]<stdout>:next\n") << "an unfinished last line gets its newline";
  out.finish();
  EXPECT_EQ(sink.writes().size(), 2u);
}

TEST(LinePrefixer, CarriageReturnEndsALineForProgressBars) {
  RecordingSink sink;
  LinePrefixer out(1, Stream::kStdout, sink);
  out.feed("10%\r20%\rdone\r\n");
  EXPECT_EQ(sink.out(), "[1]<stdout>:10%\r[1]<stdout>:20%\r[1]<stdout>:done\r\n");
}

TEST(LinePrefixer, OneWritePerFeedWithWholeLinesOnly) {
  RecordingSink sink;
  LinePrefixer a(0, Stream::kStdout, sink), b(1, Stream::kStdout, sink);
  a.feed("a1\na2");
  b.feed("b1\n");
  a.feed("-end\n");
  ASSERT_EQ(sink.writes().size(), 3u);
  EXPECT_EQ(sink.writes()[0].second, "[0]<stdout>:a1\n");
  EXPECT_EQ(sink.writes()[1].second, "[1]<stdout>:b1\n");
  EXPECT_EQ(sink.writes()[2].second, "[0]<stdout>:a2-end\n");
}

TEST(LinePrefixer, EndlessLineGoesOutInBoundedPieces) {
  RecordingSink sink;
  LinePrefixer out(0, Stream::kStdout, sink);
  const std::string chunk(LinePrefixer::kMaxLineBytes / 2 + 1, 'x');
  out.feed(chunk);
  EXPECT_TRUE(sink.out().empty());
  out.feed(chunk);
  EXPECT_EQ(sink.out(), "[0]<stdout>:" + std::string(LinePrefixer::kMaxLineBytes, 'x') + "\n");
  out.finish();
  EXPECT_EQ(sink.out().size(), 2 * std::string("[0]<stdout>:").size() + 2 * chunk.size() + 2);
}

TEST(LinePrefixer, SayPrefixesKorovodrunMessages) {
  RecordingSink sink;
  say(sink, "rank 1 exited");
  EXPECT_EQ(sink.err(), "korovodrun: rank 1 exited\n");
}

}  // namespace
}  // namespace korovod::launcher
