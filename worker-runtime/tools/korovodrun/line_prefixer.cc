#include "line_prefixer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>

namespace korovod::launcher {

void ConsoleSink::write(Stream stream, std::string_view lines) {
  const int fd = stream == Stream::kStdout ? 1 : 2;
  while (!lines.empty()) {
    const ssize_t n = ::write(fd, lines.data(), lines.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the console went away (a closed pipe): nothing else to do with it
    lines.remove_prefix(static_cast<size_t>(n));
  }
}

void say(OutputSink& sink, std::string_view text) { sink.write(Stream::kStderr, fmt::format("korovodrun: {}\n", text)); }

LinePrefixer::LinePrefixer(int rank, Stream stream, OutputSink& sink)
    : LinePrefixer(std::to_string(rank), stream, sink) {}

LinePrefixer::LinePrefixer(const std::string& label, Stream stream, OutputSink& sink)
    : prefix_(fmt::format("[{}]<{}>:", label, stream == Stream::kStdout ? "stdout" : "stderr")),
      stream_(stream),
      sink_(sink) {}

void LinePrefixer::feed(std::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    size_t end = bytes.find_first_of("\r\n");
    if (end != std::string_view::npos && bytes[end] == '\r' && end + 1 < bytes.size() && bytes[end + 1] == '\n') {
      ++end;  // "\r\n" ends one line
    }
    if (end == std::string_view::npos) {
      pending_.append(bytes);
      break;
    }
    out += prefix_;
    out += pending_;
    out.append(bytes.substr(0, end + 1));
    pending_.clear();
    bytes.remove_prefix(end + 1);
  }
  while (pending_.size() >= kMaxLineBytes) {
    out += prefix_;
    out.append(pending_, 0, kMaxLineBytes);
    out += '\n';
    pending_.erase(0, kMaxLineBytes);
  }
  if (!out.empty()) sink_.write(stream_, out);
}

void LinePrefixer::finish() {
  if (pending_.empty()) return;
  sink_.write(stream_, prefix_ + pending_ + "\n");
  pending_.clear();
}

}  // namespace korovod::launcher
