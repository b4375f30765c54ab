#include "kube/clock.h"

#include <cctype>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace kube {

std::string format_time(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(
      std::chrono::floor<std::chrono::seconds>(t));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string format_micro_time(std::chrono::system_clock::time_point t) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  std::string s = format_time(secs);
  char frac[32];
  std::snprintf(frac, sizeof frac, ".%06lldZ", static_cast<long long>(micros));
  s.pop_back();  // the 'Z'
  return s + frac;
}

namespace {

int digits(const std::string& s, size_t pos, size_t n) {
  if (pos + n > s.size()) throw std::invalid_argument("truncated time: " + s);
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i])))
      throw std::invalid_argument("bad digit in time: " + s);
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

void expect(const std::string& s, size_t pos, char c) {
  if (pos >= s.size() || s[pos] != c)
    throw std::invalid_argument(std::string("expected '") + c + "' in time: " + s);
}

}  // namespace

std::chrono::system_clock::time_point parse_time(const std::string& s) {
  using namespace std::chrono;
  const int year = digits(s, 0, 4);
  expect(s, 4, '-');
  const int month = digits(s, 5, 2);
  expect(s, 7, '-');
  const int day = digits(s, 8, 2);
  if (s.size() < 11 || (s[10] != 'T' && s[10] != 't' && s[10] != ' '))
    throw std::invalid_argument("expected 'T' in time: " + s);
  const int hour = digits(s, 11, 2);
  expect(s, 13, ':');
  const int minute = digits(s, 14, 2);
  expect(s, 16, ':');
  const int second = digits(s, 17, 2);
  const year_month_day ymd{std::chrono::year(year), std::chrono::month(month),
                           std::chrono::day(day)};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60)
    throw std::invalid_argument("time out of range: " + s);
  size_t pos = 19;
  nanoseconds frac(0);
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int64_t scale = 100000000;
    const size_t start = pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      frac += nanoseconds((s[pos] - '0') * scale);
      scale /= 10;
      ++pos;
    }
    if (pos == start) throw std::invalid_argument("empty fraction in time: " + s);
  }
  minutes offset(0);
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int sign = s[pos] == '-' ? -1 : 1;
    const int oh = digits(s, pos + 1, 2);
    expect(s, pos + 3, ':');
    const int om = digits(s, pos + 4, 2);
    offset = minutes(sign * (oh * 60 + om));
    pos += 6;
  } else {
    throw std::invalid_argument("missing zone in time: " + s);
  }
  if (pos != s.size()) throw std::invalid_argument("trailing characters in time: " + s);
  const auto tp = sys_days(ymd) + hours(hour) + minutes(minute) + seconds(second) - offset;
  return system_clock::time_point(duration_cast<system_clock::duration>(tp.time_since_epoch() + frac));
}

}  // namespace kube
