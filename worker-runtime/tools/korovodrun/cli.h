// korovodrun's command line (CLI11), read once into LaunchOptions. horovodrun's spellings work:
// -np, -cb and -hostfile (single dash, several letters: rewritten before CLI11 sees them, since
// CLI11 reads a single dash as one-letter flags), and everything from the first word that is not
// a flag (or after `--`) is the command, its own flags included.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launch_options.h"

namespace korovod::launcher {

struct ParsedCommandLine {
  LaunchOptions options;
  // Set when korovodrun should stop here with this exit code: after --help (0), or a usage
  // error (2, as horovodrun's argparse), already printed.
  std::optional<int> exit_code;
};

// `args` without the program name.
ParsedCommandLine parse_command_line(const std::vector<std::string>& args);

}  // namespace korovod::launcher
