// PodLogBook: the last lines of each container, as pods/log's tailLines reads them.
#include "local/pods/log_book.h"

#include <gtest/gtest.h>

namespace local {
namespace {

TEST(PodLogBook, TailsEachContainerApartAndForgetsTheOldest) {
  PodLogBook book(3);
  EXPECT_FALSE(book.tail("ns", "launcher", "main", 10).has_value());  // nothing printed yet
  for (const char* l : {"a", "b", "c", "d"}) book.add("launcher", "main", l);
  book.add("launcher", "sidecar", "x");
  EXPECT_EQ(book.tail("ns", "launcher", "main", 10), "b\nc\nd\n");
  EXPECT_EQ(book.tail("ns", "launcher", "main", 2), "c\nd\n");
  EXPECT_EQ(book.tail("ns", "launcher", "sidecar", 10), "x\n");
  EXPECT_EQ(book.tail("ns", "launcher", "main", 0), "");
  book.restarted("launcher", "main");
  EXPECT_EQ(book.tail("ns", "launcher", "main", 10), "");
  EXPECT_EQ(book.tail("ns", "launcher", "sidecar", 10), "x\n");
}

}  // namespace
}  // namespace local
