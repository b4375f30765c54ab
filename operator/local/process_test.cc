#include "local/process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace local {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> strings_of(char* const* array) {
  std::vector<std::string> out;
  for (; *array != nullptr; ++array) out.emplace_back(*array);
  return out;
}

// A folder holding one executable file, `name`, removed at the end of the test.
class BinDir {
 public:
  explicit BinDir(const std::string& name)
      : dir_(fs::temp_directory_path() / ("korovod-process-test-" + std::to_string(getpid()))) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / name) << "#!/bin/sh\n";
    fs::permissions(dir_ / name, fs::perms::owner_all);
  }
  ~BinDir() { fs::remove_all(dir_); }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

TEST(ExecArgs, ResolvesArgv0AgainstTheEnvsPathAndNullTerminatesBothArrays) {
  BinDir bin("trainer");
  const Exec exec{{"trainer", "--epochs", "3"},
                  {{"PATH", "/nonexistent:" + bin.path()}, {"RANK", "1"}, {"EMPTY", ""}}};
  const ExecArgs args(exec);
  EXPECT_EQ(args.program(), bin.path() + "/trainer");
  EXPECT_EQ(strings_of(args.argv()), (std::vector<std::string>{"trainer", "--epochs", "3"}));
  EXPECT_EQ(strings_of(args.envp()),
            (std::vector<std::string>{"PATH=/nonexistent:" + bin.path(), "RANK=1", "EMPTY="}));
}

TEST(ExecArgs, NameWithASlashIsTakenAsGivenAndAnEmptyEnvGivesAnEmptyEnvp) {
  const ExecArgs args(Exec{{"./run.sh"}, {}});
  EXPECT_EQ(args.program(), "./run.sh");
  EXPECT_EQ(strings_of(args.argv()), (std::vector<std::string>{"./run.sh"}));
  EXPECT_TRUE(strings_of(args.envp()).empty());
}

TEST(ExecArgs, EmptyCommandAndAProgramNotOnPathAreErrorsNamingIt) {
  EXPECT_THROW(ExecArgs(Exec{{}, {{"PATH", "/bin"}}}), std::invalid_argument);
  BinDir bin("trainer");
  try {
    ExecArgs args(Exec{{"no-such-trainer"}, {{"PATH", bin.path()}}});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "executable file not found in $PATH: no-such-trainer");
  }
}

}  // namespace
}  // namespace local
