// Adasum computed the plain way, in double, for the algorithm's tests: two vectors combine as
//   (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// and ranks pair up a binary tree: (0,1), (2,3), ..., then those pairs, and so on.
#pragma once

#include <cfloat>
#include <cmath>
#include <utility>
#include <vector>

namespace korovod::adasumtest {

using Vec = std::vector<double>;

inline Vec adasum_pair(const Vec& a, const Vec& b) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  const double tiny = std::sqrt(DBL_MIN);
  const double ka = aa >= tiny ? 1 - dot / (2 * aa) : 1, kb = bb >= tiny ? 1 - dot / (2 * bb) : 1;
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = ka * a[i] + kb * b[i];
  return out;
}

// The tree over v (a power-of-2 number of vectors).
inline Vec tree(std::vector<Vec> v) {
  while (v.size() > 1) {
    std::vector<Vec> up;
    for (size_t i = 0; i < v.size(); i += 2) up.push_back(adasum_pair(v[i], v[i + 1]));
    v = std::move(up);
  }
  return v[0];
}

}  // namespace korovod::adasumtest
