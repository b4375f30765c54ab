#include "local/rsh_agent.h"

#include <set>
#include <stdexcept>

#include "local/pod_launch.h"

namespace local {

RshRequest parse_rsh_args(const std::vector<std::string>& args) {
  static const std::set<std::string> with_value = {"-o", "-p", "-l", "-i", "-F", "-E", "-J",
                                                   "-b", "-c", "-m", "-S", "-W", "-w"};
  RshRequest req;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') break;
    if (with_value.count(a)) ++i;  // "-o X": skip the value too ("-oX" is one argument)
  }
  if (i >= args.size()) throw std::invalid_argument("usage: korovod-rsh [options] HOST COMMAND...");
  req.host = args[i++];
  if (const auto at = req.host.find('@'); at != std::string::npos) req.host.erase(0, at + 1);
  for (; i < args.size(); ++i) req.command += (req.command.empty() ? "" : " ") + args[i];
  if (req.command.empty()) throw std::invalid_argument("korovod-rsh: no command for " + req.host);
  return req;
}

std::pair<std::string, std::string> pod_of_host(const std::string& host,
                                                const std::string& default_ns) {
  std::vector<std::string> labels;
  size_t start = 0;
  while (true) {
    const size_t dot = host.find('.', start);
    labels.push_back(host.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  const std::string ns = labels.size() >= 3 && !labels[2].empty() ? labels[2] : default_ns;
  return {ns, labels[0]};
}

Exec rsh_exec(const RshRequest& request, const std::filesystem::path& pod_dir) {
  PodContext ctx = read_pod_context(pod_dir);
  ctx.spec.command = {"/bin/sh", "-c", request.command};
  return sandboxed(ctx.spec, ctx.isolation, ctx.bwrap_path);
}

}  // namespace local
