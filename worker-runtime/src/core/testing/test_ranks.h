// Runs one function per rank on its own thread (N ranks as N threads over the fake transport).
#pragma once

#include <functional>
#include <thread>
#include <vector>

namespace korovod::testing {

inline void run_ranks(int n, const std::function<void(int rank)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { body(r); });
  for (auto& t : threads) t.join();
}

}  // namespace korovod::testing
