// The output of a child process as lines: what korovodrun prefixes with a rank and local mode
// sends to a pod's log. A line ends with "\n", "\r\n" or a lone "\r" (a progress bar redrawing
// its line), and a line that grows past the bound goes out in pieces, so a process that never
// writes a line end cannot grow its reader's memory without bound.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace korovod::os {

class LineSplitter {
 public:
  static constexpr size_t kDefaultMaxLineBytes = 64 * 1024;
  // `text` without its end; `end` is "\n", "\r\n" or "\r" as the process wrote it, or empty for a
  // piece of an over-long line and for an unfinished last line (finish()).
  using OnLine = std::function<void(std::string_view text, std::string_view end)>;

  explicit LineSplitter(size_t max_line_bytes = kDefaultMaxLineBytes) : max_line_bytes_(max_line_bytes) {}

  // Every line that `bytes` completes, in order; the unfinished rest is kept for the next call.
  void feed(std::string_view bytes, const OnLine& on_line);
  // End of the stream: the unfinished last line, if any.
  void finish(const OnLine& on_line);

 private:
  size_t max_line_bytes_;
  std::string pending_;  // the current line so far
};

}  // namespace korovod::os
