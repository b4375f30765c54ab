// Byte helpers the data planes share for the variable-size collectives (allgatherv, alltoallv):
// where each rank's bytes start in a concatenated buffer, and a copy that tolerates n == 0 and
// in-place buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace korovod {

// Exclusive prefix sum: out[i] = counts[0] + ... + counts[i - 1].
inline std::vector<int64_t> displacements(const std::vector<int64_t>& counts) {
  std::vector<int64_t> out(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) out[i] = out[i - 1] + counts[i - 1];
  return out;
}

// memcpy of n bytes, nothing when n <= 0 or dst == src.
inline void copy_bytes(std::byte* dst, const std::byte* src, int64_t n) {
  if (n > 0 && dst != src) std::memcpy(dst, src, static_cast<size_t>(n));
}

}  // namespace korovod
