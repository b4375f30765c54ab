#include "check_build.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace korovod::launcher {
namespace {

TEST(CheckBuild, ReportMarksWhatWasBuilt) {
  BuildInfo info;
  info.version = "9.9.9";
  info.mpi = true;
  info.nccl = false;
  info.mpirun = "/opt/ompi/bin/mpirun";
  const std::string report = check_build_report(info);
  EXPECT_NE(report.find("korovod v9.9.9:"), std::string::npos) << report;
  EXPECT_NE(report.find("[X] MPI    (libkorovod_mpi.so"), std::string::npos) << report;
  EXPECT_NE(report.find("[X] TCP    (rendezvous store"), std::string::npos) << report;
  EXPECT_NE(report.find("[ ] NCCL"), std::string::npos) << report;
  EXPECT_NE(report.find("[X] shared memory"), std::string::npos) << report;
  EXPECT_NE(report.find("mpirun for --mpi: /opt/ompi/bin/mpirun"), std::string::npos) << report;
  info.mpi = false;
  info.mpirun.clear();
  const std::string without = check_build_report(info);
  EXPECT_NE(without.find("[ ] MPI    (libkorovod_mpi.so"), std::string::npos) << without;
  EXPECT_NE(without.find("mpirun for --mpi: not on PATH"), std::string::npos) << without;
}

TEST(CheckBuild, LooksMpirunUpOnTheGivenPath) {
  const CommandProbe none = [](const std::vector<std::string>&) { return false; };
  EXPECT_TRUE(detect_build_info({{"PATH", "/nonexistent"}}, none).mpirun.empty());
  EXPECT_FALSE(detect_build_info({{"PATH", "/nonexistent"}}, none).version.empty());
}

TEST(CheckBuild, ListsEachFrameworkAsItsImportCheckSays) {
  std::vector<std::vector<std::string>> ran;
  const CommandProbe only_torch = [&ran](const std::vector<std::string>& argv) {
    ran.push_back(argv);
    return argv.back() == "import korovod.torch";
  };
  const BuildInfo info = detect_build_info({{"PATH", "/nonexistent"}}, only_torch);
  ASSERT_EQ(ran.size(), 3u);
  EXPECT_EQ(ran[0], (std::vector<std::string>{"python3", "-c", "import korovod.torch"}));
  // No korovod-tf-python on PATH: TensorFlow and Keras are asked of python3.
  EXPECT_EQ(ran[1], (std::vector<std::string>{"python3", "-c", "import korovod.tensorflow"}));
  EXPECT_EQ(ran[2], (std::vector<std::string>{"python3", "-c", "import korovod.keras"}));
  const std::string report = check_build_report(info);
  EXPECT_NE(report.find("[X] PyTorch    (python3 -c 'import korovod.torch')"), std::string::npos) << report;
  EXPECT_NE(report.find("[ ] TensorFlow (python3 -c 'import korovod.tensorflow')"), std::string::npos) << report;
  EXPECT_NE(report.find("[ ] Keras      (python3 -c 'import korovod.keras')"), std::string::npos) << report;
}

TEST(CheckBuild, AsksTheImagesTensorFlowWrapperWhenItIsOnPath) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "cb-tf-wrapper";
  std::filesystem::create_directories(dir);
  const std::filesystem::path wrapper = dir / "korovod-tf-python";
  { std::ofstream(wrapper) << "#!/bin/sh\n"; }
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  const std::vector<FrameworkCheck> checks = framework_checks({{"PATH", dir.string()}});
  ASSERT_EQ(checks.size(), 3u);
  EXPECT_EQ(checks[0].command.front(), "python3");
  EXPECT_EQ(checks[1].command.front(), "korovod-tf-python");
  EXPECT_EQ(checks[2].command.front(), "korovod-tf-python");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace korovod::launcher
