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
  lines_.feed(bytes, [&](std::string_view text, std::string_view end) { append_line(out, text, end); });
  if (!out.empty()) sink_.write(stream_, out);
}

void LinePrefixer::finish() {
  std::string out;
  lines_.finish([&](std::string_view text, std::string_view end) { append_line(out, text, end); });
  if (!out.empty()) sink_.write(stream_, out);
}

// The line with its prefix and the end the rank wrote ("\n" for a piece or an unfinished line).
void LinePrefixer::append_line(std::string& out, std::string_view text, std::string_view end) const {
  out += prefix_;
  out.append(text);
  out.append(end.empty() ? std::string_view("\n") : end);
}

}  // namespace korovod::launcher
