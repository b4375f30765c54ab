#include "check_build.h"

#include <gtest/gtest.h>

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
  EXPECT_TRUE(detect_build_info({{"PATH", "/nonexistent"}}).mpirun.empty());
  EXPECT_FALSE(detect_build_info({{"PATH", "/nonexistent"}}).version.empty());
}

}  // namespace
}  // namespace korovod::launcher
