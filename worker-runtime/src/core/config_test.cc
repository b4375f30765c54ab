// Config parsing (KOROVOD_* with HOROVOD_* aliases).
#include <gtest/gtest.h>

#include "korovod/config.h"

namespace korovod {
namespace {

TEST(Config, DefaultsMatchHorovod) {
  Result<Config> c = parse_config({});
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->fusion_threshold_bytes, 128ll * 1024 * 1024);
  EXPECT_EQ(c->cycle_time_ms, 1.0);
  EXPECT_EQ(c->cache_capacity, 1024);
  EXPECT_EQ(c->stall_warning_seconds, 60.0);
  EXPECT_EQ(c->stall_shutdown_seconds, 0.0);
  EXPECT_EQ(c->log_level, LogLevel::kWarning);
  EXPECT_TRUE(c->stall_check_enabled);
}

TEST(Config, HorovodAliasesAreReadAndKorovodNamesWin) {
  Result<Config> c = parse_config({{"HOROVOD_FUSION_THRESHOLD", "1024"},
                                   {"HOROVOD_CYCLE_TIME", "2.5"},
                                   {"KOROVOD_CYCLE_TIME", "0.5"},
                                   {"HOROVOD_CACHE_CAPACITY", "0"},
                                   {"HOROVOD_TIMELINE", "/tmp/t.json"},
                                   {"HOROVOD_TIMELINE_MARK_CYCLES", "1"},
                                   {"HOROVOD_STALL_CHECK_DISABLE", "true"},
                                   {"KOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "5"},
                                   {"HOROVOD_LOG_LEVEL", "debug"},
                                   {"HOROVOD_THREAD_AFFINITY", "0,1,3"},
                                   {"KOROVOD_COLLECTIVE_TIMEOUT_SECONDS", "7"}});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->fusion_threshold_bytes, 1024);
  EXPECT_EQ(c->cycle_time_ms, 0.5);
  EXPECT_EQ(c->cache_capacity, 0);
  EXPECT_EQ(c->timeline_path, "/tmp/t.json");
  EXPECT_TRUE(c->timeline_mark_cycles);
  EXPECT_FALSE(c->stall_check_enabled);
  EXPECT_EQ(c->stall_shutdown_seconds, 5.0);
  EXPECT_EQ(c->log_level, LogLevel::kDebug);
  EXPECT_EQ(c->thread_affinity, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(c->collective_timeout_seconds, 7.0);
}

TEST(Config, HostNameForErrorsIsReadUnderBothNames) {
  EXPECT_EQ(parse_config({})->hostname, "");  // the real one
  EXPECT_EQ(parse_config({{"HOROVOD_HOSTNAME", "h1"}})->hostname, "h1");
  EXPECT_EQ(parse_config({{"HOROVOD_HOSTNAME", "h1"}, {"KOROVOD_HOSTNAME", "k1"}})->hostname, "k1");
  EXPECT_EQ(parse_config({{"HOSTNAME", "shell"}})->hostname, "");  // the shell's variable is not ours
}

TEST(Config, CpuOperationsAndSharedMemoryGeometry) {
  Result<Config> d = parse_config({});
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->cpu_operations, "");  // shared memory where all ranks share a host, else MPI
  EXPECT_EQ(d->shm_slot_bytes, 256 * 1024);
  EXPECT_EQ(d->shm_slots, 8);
  EXPECT_EQ(d->shm_streaming_bytes, 1 << 20);
  EXPECT_EQ(d->shm_slot_stores, "auto");
  EXPECT_EQ(parse_config({{"KOROVOD_SHM_SLOT_STORES", "Streaming"}})->shm_slot_stores, "streaming");
  EXPECT_EQ(parse_config({{"KOROVOD_SHM_SLOT_STORES", "cached"}})->shm_slot_stores, "cached");
  Result<Config> bad_stores = parse_config({{"KOROVOD_SHM_SLOT_STORES", "fast"}});
  ASSERT_FALSE(bad_stores.is_ok());
  EXPECT_NE(bad_stores.status().message().find("KOROVOD_SHM_SLOT_STORES"), std::string::npos)
      << bad_stores.status().message();
  Result<Config> c = parse_config({{"HOROVOD_CPU_OPERATIONS", "MPI"},
                                   {"KOROVOD_SHM_SLOT_BYTES", "10000"},
                                   {"KOROVOD_SHM_SLOTS", "4"},
                                   {"KOROVOD_SHM_STREAMING_BYTES", "0"}});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->cpu_operations, "mpi");
  EXPECT_EQ(c->shm_slot_bytes, 8192);  // whole pages
  EXPECT_EQ(c->shm_slots, 4);
  EXPECT_EQ(c->shm_streaming_bytes, 0);  // never stream
  EXPECT_EQ(parse_config({{"KOROVOD_CPU_OPERATIONS", "shm"}, {"HOROVOD_CPU_OPERATIONS", "mpi"}})->cpu_operations, "shm");
  EXPECT_FALSE(parse_config({{"HOROVOD_CPU_OPERATIONS", "gloo"}}).is_ok());  // not silently MPI
  EXPECT_FALSE(parse_config({{"KOROVOD_SHM_SLOTS", "2"}}).is_ok());          // the pipeline needs 4
  EXPECT_FALSE(parse_config({{"KOROVOD_SHM_SLOT_BYTES", "100"}}).is_ok());
  Result<Config> negative = parse_config({{"KOROVOD_SHM_STREAMING_BYTES", "-1"}});
  ASSERT_FALSE(negative.is_ok());
  EXPECT_NE(negative.status().message().find("SHM_STREAMING_BYTES"), std::string::npos) << negative.status().message();
}

TEST(Config, InlineCyclesOnByDefaultAndSwitchable) {
  EXPECT_TRUE(parse_config({})->inline_cycles);
  EXPECT_FALSE(parse_config({{"KOROVOD_INLINE_CYCLES", "0"}})->inline_cycles);
  EXPECT_FALSE(parse_config({{"HOROVOD_INLINE_CYCLES", "false"}})->inline_cycles);
  Result<Config> bad = parse_config({{"KOROVOD_INLINE_CYCLES", "sometimes"}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("INLINE_CYCLES"), std::string::npos) << bad.status().message();
}

TEST(Config, NetworkSettingsAreKeptForTheStartupLineInAFixedOrder) {
  Result<Config> c = parse_config({{"UCX_NET_DEVICES", "mlx5_0:1"}, {"NCCL_IB_HCA", "mlx5_0,mlx5_1"},
                                   {"NCCL_SOCKET_IFNAME", "eth0"}, {"NCCL_DEBUG", "INFO"}});
  ASSERT_TRUE(c.is_ok());
  using Pair = std::pair<std::string, std::string>;
  EXPECT_EQ(c->network_env, (std::vector<Pair>{{"NCCL_IB_HCA", "mlx5_0,mlx5_1"}, {"NCCL_SOCKET_IFNAME", "eth0"},
                                               {"UCX_NET_DEVICES", "mlx5_0:1"}}));
  EXPECT_TRUE(parse_config({})->network_env.empty());
}

TEST(Config, MalformedValueIsAnErrorNamingTheVariable) {
  Result<Config> c = parse_config({{"HOROVOD_FUSION_THRESHOLD", "64MB"}});
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("HOROVOD_FUSION_THRESHOLD"), std::string::npos);
  EXPECT_FALSE(parse_config({{"KOROVOD_LOG_LEVEL", "LOUD"}}).is_ok());
  EXPECT_FALSE(parse_config({{"KOROVOD_THREAD_AFFINITY", "1,,2"}}).is_ok());
  EXPECT_FALSE(parse_config({{"KOROVOD_CYCLE_TIME", "-1"}}).is_ok());
}

}  // namespace
}  // namespace korovod
