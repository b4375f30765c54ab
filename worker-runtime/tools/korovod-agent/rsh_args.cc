#include "rsh_args.h"

#include <fmt/format.h>

#include <string_view>

#include "settings.h"

namespace korovod::agent {
namespace {

constexpr std::string_view kOptionsWithValue = "opliFEJbcDeLmOQRSWw";

// One word of options ("-x", "-xT", "-p2222", "-o" + the next word): sets `port` when -p is
// among them; `next` is advanced past a value taken from the following word.
Status read_option_word(const std::vector<std::string>& args, size_t& next, int& port) {
  const std::string& word = args[next++];
  for (size_t i = 1; i < word.size(); ++i) {
    const char letter = word[i];
    if (kOptionsWithValue.find(letter) == std::string_view::npos) continue;  // a flag
    std::string value = word.substr(i + 1);
    if (value.empty()) {
      if (next >= args.size()) return Status::invalid_argument(fmt::format("option -{} needs a value", letter));
      value = args[next++];
    }
    if (letter == 'p') {
      Result<int> p = parse_port(value, "-p");
      if (!p.is_ok()) return p.status();
      port = *p;
    }
    return Status::ok();
  }
  return Status::ok();
}

}  // namespace

Result<RshRequest> parse_rsh_args(const std::vector<std::string>& args, int default_port) {
  RshRequest request;
  request.port = default_port;
  size_t next = 0;
  while (next < args.size() && args[next].size() > 1 && args[next][0] == '-') {
    if (args[next] == "--") {
      ++next;
      break;
    }
    KOROVOD_RETURN_IF_ERROR(read_option_word(args, next, request.port));
  }
  if (next >= args.size()) return Status::invalid_argument("no HOST given (korovod-agent rsh [options] HOST COMMAND...)");
  request.host = args[next++];
  for (const size_t first = next; next < args.size(); ++next) {
    if (next > first) request.command += ' ';
    request.command += args[next];
  }
  if (request.command.empty()) {
    return Status::invalid_argument(
        fmt::format("no COMMAND given for {}: korovod-agent rsh runs a command, it opens no login shell", request.host));
  }
  return request;
}

}  // namespace korovod::agent
