#include "mpijob/quantity.h"

#include <stdexcept>
#include <utility>

namespace mpijob {
namespace {

__int128 pow_int(__int128 base, int exp) {
  __int128 r = 1;
  while (exp-- > 0) r *= base;
  return r;
}

// Multiplier for a suffix and whether it is binary; throws for an unknown suffix.
std::pair<__int128, int> suffix_scale(const std::string& s, bool& binary) {
  static const std::pair<const char*, int> kBinary[] = {{"Ki", 1}, {"Mi", 2}, {"Gi", 3},
                                                         {"Ti", 4}, {"Pi", 5}, {"Ei", 6}};
  static const std::pair<const char*, int> kDecimal[] = {{"k", 3},  {"M", 6},  {"G", 9},
                                                          {"T", 12}, {"P", 15}, {"E", 18}};
  binary = false;
  if (s.empty()) return {1, 0};
  if (s == "m") return {1, -3};
  for (auto [name, p] : kBinary) {
    if (s == name) {
      binary = true;
      return {pow_int(1024, p), 0};
    }
  }
  for (auto [name, p] : kDecimal) {
    if (s == name) return {1, p};
  }
  if ((s[0] == 'e' || s[0] == 'E') && s.size() > 1) return {1, std::stoi(s.substr(1))};
  throw std::invalid_argument("quantity suffix \"" + s + "\"");
}

}  // namespace

Quantity Quantity::parse(const kube::Object& q) {
  std::string s = q.is_number() ? q.dump() : q.get<std::string>();
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  __int128 mantissa = 0;
  int frac_digits = 0;
  bool seen_digit = false, in_fraction = false;
  for (; i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.'); ++i) {
    if (s[i] == '.') {
      if (in_fraction) throw std::invalid_argument("quantity \"" + s + "\"");
      in_fraction = true;
      continue;
    }
    seen_digit = true;
    mantissa = mantissa * 10 + (s[i] - '0');
    if (in_fraction) ++frac_digits;
  }
  if (!seen_digit) throw std::invalid_argument("quantity \"" + s + "\"");
  Quantity out;
  auto [mult, exp10] = suffix_scale(s.substr(i), out.binary_);
  int e = exp10 + 3 - frac_digits;  // to milli-units
  __int128 v = mantissa * mult;
  if (e >= 0) {
    v *= pow_int(10, e);
  } else {
    __int128 d = pow_int(10, -e);
    v = (v + d - 1) / d;  // Kubernetes rounds up to the nearest milli
  }
  out.milli_ = negative ? -v : v;
  return out;
}

Quantity& Quantity::operator+=(const Quantity& o) {
  if (milli_ == 0) binary_ = o.binary_;
  milli_ += o.milli_;
  return *this;
}

Quantity Quantity::operator*(int64_t n) const {
  Quantity r = *this;
  r.milli_ *= n;
  return r;
}

std::string Quantity::to_string() const {
  auto digits = [](__int128 v) {
    if (v == 0) return std::string("0");
    std::string s;
    bool neg = v < 0;
    if (neg) v = -v;
    while (v > 0) {
      s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
      v /= 10;
    }
    return neg ? "-" + s : s;
  };
  if (milli_ % 1000 != 0) return digits(milli_) + "m";
  __int128 units = milli_ / 1000;
  if (units == 0) return "0";
  if (binary_) {
    static const char* kSuffix[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
    for (int p = 6; p >= 1; --p) {
      if (units % pow_int(1024, p) == 0) return digits(units / pow_int(1024, p)) + kSuffix[6 - p];
    }
    return digits(units);
  }
  static const char* kSuffix[] = {"E", "P", "T", "G", "M", "k"};
  for (int p = 6; p >= 1; --p) {
    if (units % pow_int(1000, p) == 0) return digits(units / pow_int(1000, p)) + kSuffix[6 - p];
  }
  return digits(units);
}

}  // namespace mpijob
