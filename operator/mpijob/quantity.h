// Just enough of Kubernetes' resource.Quantity to sum container requests for PodGroup
// minResources: parse, multiply, add, format. Values are kept exactly in milli-units.
#pragma once

#include <string>

#include "kube/client.h"

namespace mpijob {

class Quantity {
 public:
  Quantity() = default;
  // "500m", "2", "1.5Gi", "1e3", or a JSON number. Throws std::invalid_argument.
  static Quantity parse(const kube::Object& q);

  Quantity& operator+=(const Quantity& o);
  Quantity operator*(int64_t n) const;
  // Canonical-ish form: binary suffix when the inputs used one and it divides exactly, else the
  // largest exact decimal suffix, else milli-units ("1500m").
  std::string to_string() const;
  __int128 milli() const { return milli_; }

 private:
  __int128 milli_ = 0;
  bool binary_ = false;
};

}  // namespace mpijob
