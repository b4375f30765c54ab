#include "os/line_splitter.h"

namespace korovod::os {

void LineSplitter::feed(std::string_view bytes, const OnLine& on_line) {
  while (!bytes.empty()) {
    size_t end = bytes.find_first_of("\r\n");
    if (end == std::string_view::npos) {
      pending_.append(bytes);
      break;
    }
    // "\r\n" is one end; a "\r" that is the last byte of this read is taken as a lone "\r" (a
    // redraw), which is what a terminal shows either way.
    const size_t end_len = bytes[end] == '\r' && end + 1 < bytes.size() && bytes[end + 1] == '\n' ? 2 : 1;
    if (pending_.empty()) {
      on_line(bytes.substr(0, end), bytes.substr(end, end_len));
    } else {
      pending_.append(bytes.substr(0, end));
      on_line(pending_, bytes.substr(end, end_len));
      pending_.clear();
    }
    bytes.remove_prefix(end + end_len);
  }
  size_t sent = 0;
  while (pending_.size() - sent >= max_line_bytes_) {
    on_line(std::string_view(pending_).substr(sent, max_line_bytes_), {});
    sent += max_line_bytes_;
  }
  pending_.erase(0, sent);
}

void LineSplitter::finish(const OnLine& on_line) {
  if (pending_.empty()) return;
  on_line(pending_, {});
  pending_.clear();
}

}  // namespace korovod::os
