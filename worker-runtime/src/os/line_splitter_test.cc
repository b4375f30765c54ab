#include "os/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace korovod::os {
namespace {

using Lines = std::vector<std::pair<std::string, std::string>>;  // text, end

struct Collect {
  Lines lines;
  LineSplitter::OnLine fn() {
    return [this](std::string_view text, std::string_view end) { lines.emplace_back(text, end); };
  }
};

TEST(LineSplitter, EveryLineWithTheEndItWasWrittenWith) {
  LineSplitter s;
  Collect c;
  s.feed("a\nb\r\nc\rd", c.fn());
  EXPECT_EQ(c.lines, (Lines{{"a", "\n"}, {"b", "\r\n"}, {"c", "\r"}}));
  s.finish(c.fn());
  EXPECT_EQ(c.lines.back(), (std::pair<std::string, std::string>{"d", ""})) << "the unfinished last line";
  s.finish(c.fn());
  EXPECT_EQ(c.lines.size(), 4u) << "finish twice: nothing more";
}

TEST(LineSplitter, ALineSplitAcrossReadsComesOutWhole) {
  LineSplitter s;
  Collect c;
  s.feed("par", c.fn());
  EXPECT_TRUE(c.lines.empty());
  s.feed("tial\nne", c.fn());
  s.feed("xt\n", c.fn());
  EXPECT_EQ(c.lines, (Lines{{"partial", "\n"}, {"next", "\n"}}));
}

// A "\r" that ends one read is a redraw: the "\n" that may follow in the next read is an empty
// line then (a terminal shows the same).
TEST(LineSplitter, ACarriageReturnAtTheEndOfAReadEndsTheLine) {
  LineSplitter s;
  Collect c;
  s.feed("a\r", c.fn());
  s.feed("\nb\n", c.fn());
  EXPECT_EQ(c.lines, (Lines{{"a", "\r"}, {"", "\n"}, {"b", "\n"}}));
}

TEST(LineSplitter, AnEndlessLineGoesOutInPiecesOfTheBound) {
  LineSplitter s(4);
  Collect c;
  s.feed("abc", c.fn());
  EXPECT_TRUE(c.lines.empty());
  s.feed("defghij", c.fn());
  EXPECT_EQ(c.lines, (Lines{{"abcd", ""}, {"efgh", ""}}));
  s.feed("k\n", c.fn());
  EXPECT_EQ(c.lines.back(), (std::pair<std::string, std::string>{"ijk", "\n"}));
}

}  // namespace
}  // namespace korovod::os
