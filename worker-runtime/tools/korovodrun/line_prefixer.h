// The console of a job: every line a rank writes is prefixed as horovodrun's gloo path does
// (`[<rank>]<stdout>:` / `[<rank>]<stderr>:`, safe_shell_exec.prefix_connection) and written
// whole, so lines of different ranks never mix mid-line; korovodrun's own lines say `korovodrun:`.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "os/line_splitter.h"

namespace korovod::launcher {

enum class Stream { kStdout, kStderr };

// Where whole lines go. One caller at a time (the supervisor's loop is single-threaded).
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  virtual void write(Stream stream, std::string_view lines) = 0;
};

// korovodrun's own stdout and stderr: each call is written completely before the next one.
class ConsoleSink : public OutputSink {
 public:
  void write(Stream stream, std::string_view lines) override;
};

// A korovodrun message: "korovodrun: <text>\n" on stderr.
void say(OutputSink& sink, std::string_view text);

class LinePrefixer {
 public:
  // A line longer than this goes out in pieces of this size (each one prefixed and ended), so
  // a rank that never writes a newline cannot grow korovodrun's memory without bound.
  static constexpr size_t kMaxLineBytes = os::LineSplitter::kDefaultMaxLineBytes;

  LinePrefixer(int rank, Stream stream, OutputSink& sink);
  // `[<label>]<stdout>:`: an elastic worker's id (host:slot), which outlives its ranks.
  LinePrefixer(const std::string& label, Stream stream, OutputSink& sink);
  // Writes every complete line in `bytes` (ended by "\n" or by "\r", as progress bars redraw a
  // line) with the prefix; keeps the incomplete rest for the next call.
  void feed(std::string_view bytes);
  // End of the stream: an incomplete last line goes out with a "\n" added.
  void finish();

 private:
  void append_line(std::string& out, std::string_view text, std::string_view end) const;

  std::string prefix_;
  Stream stream_;
  OutputSink& sink_;
  os::LineSplitter lines_;
};

}  // namespace korovod::launcher
