// Host-side values for the GPU checks: every element is a small number kept as double and
// encoded into / decoded from the tensor's dtype, so one expected-value formula serves all types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "korovod/types.h"

namespace korovod::gputest {

std::vector<std::byte> encode(DataType dtype, const std::vector<double>& values);
std::vector<double> decode(DataType dtype, const std::vector<std::byte>& bytes);
// How far a decoded value may be from the exact one (half types round; integers are exact).
double tolerance(DataType dtype, double expected);

}  // namespace korovod::gputest
