// A strict JSON (RFC 8259) reader for the store's list-page decoder: it calls a SAX-style
// handler (start_object/end_object/start_array/end_array/key/string/number_integer/
// number_unsigned/number_float/boolean/null) as nlohmann::json::sax_parse does, with the same
// values (integers as int64 when negative and uint64 otherwise, floats when they do not fit or
// have a fraction or exponent; strings as UTF-8 with escapes decoded), and rejects what
// nlohmann rejects (invalid UTF-8, lone surrogates, control characters in strings, overflowing
// floats, trailing text). Why not nlohmann's own lexer: it handles strings one character at a
// time through an input adapter and a std::string push_back, which was most of the CPU of a
// relist; here strings without escapes are handed over as views into the body, not copied.
//
// Errors throw JsonScanError naming the byte offset. Nesting uses a heap stack, not recursion.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kube {

class JsonScanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace json_scan_detail {

inline bool cont(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid UTF-8 sequence at p (lead byte >= 0x80), or 0 when invalid.
inline size_t utf8_length(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = p[0];
  const size_t left = static_cast<size_t>(end - p);
  auto in = [](unsigned char b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
  if (in(c, 0xC2, 0xDF)) return left >= 2 && cont(p[1]) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !cont(p[2])) return 0;
    const bool ok = c == 0xE0   ? in(p[1], 0xA0, 0xBF)
                    : c == 0xED ? in(p[1], 0x80, 0x9F)
                                : cont(p[1]);
    return ok ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !cont(p[2]) || !cont(p[3])) return 0;
    const bool ok = c == 0xF0   ? in(p[1], 0x90, 0xBF)
                    : c == 0xF4 ? in(p[1], 0x80, 0x8F)
                                : cont(p[1]);
    return ok ? 4 : 0;
  }
  return 0;
}

inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace json_scan_detail

template <typename Handler>
class JsonScanner {
 public:
  JsonScanner(std::string_view text, Handler& h)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), h_(h) {}

  void run() {
    // A UTF-8 byte order mark is skipped, as nlohmann's lexer does.
    if (end_ - p_ >= 3 && std::string_view(p_, 3) == "\xEF\xBB\xBF") p_ += 3;
    for (;;) {
      // One value: a scalar is read whole; a non-empty container is opened (its first key
      // read) and the loop goes on with its first value.
      ws();
      const char c = peek();
      if (c == '{') {
        ++p_;
        h_.start_object();
        ws();
        if (peek() != '}') {
          stack_.push_back(true);
          member_key();
          continue;
        }
        ++p_;
        h_.end_object();
      } else if (c == '[') {
        ++p_;
        h_.start_array();
        ws();
        if (peek() != ']') {
          stack_.push_back(false);
          continue;
        }
        ++p_;
        h_.end_array();
      } else {
        scalar(c);
      }
      // After a value: close containers, or go on to the next element.
      for (;;) {
        ws();
        if (stack_.empty()) {
          if (p_ != end_) fail("unexpected text after the JSON value");
          return;
        }
        const bool obj = stack_.back();
        const char d = peek();
        if (d == ',') {
          ++p_;
          if (obj) member_key();
          break;
        }
        if (d != (obj ? '}' : ']')) fail(obj ? "expected ',' or '}'" : "expected ',' or ']'");
        ++p_;
        stack_.pop_back();
        obj ? h_.end_object() : h_.end_array();
      }
    }
  }

 private:
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  [[noreturn]] void fail(const char* what) const {
    throw JsonScanError("invalid JSON at byte " + std::to_string(p_ - begin_) + ": " + what);
  }

  void scalar(char c) {
    switch (c) {
      case '"':
        ++p_;
        h_.string(string());
        return;
      case 't': literal("true"), h_.boolean(true); return;
      case 'f': literal("false"), h_.boolean(false); return;
      case 'n': literal("null"), h_.null(); return;
      default: number(); return;
    }
  }

  // Reads `"key":` and hands the key over; the member's value comes next.
  void member_key() {
    ws();
    if (peek() != '"') fail("expected a string as object key");
    ++p_;
    h_.key(string());
    ws();
    if (peek() != ':') fail("expected ':' after an object key");
    ++p_;
  }

  void literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
      fail("invalid literal");
    p_ += word.size();
  }

  // After the opening quote; returns the decoded string (a view into the text when it has no
  // escapes, else into scratch_, valid until the next string).
  std::string_view string() {
    using json_scan_detail::utf8_length;
    const char* start = p_;
    bool escaped = false;
    for (;;) {
      while (end_ - p_ >= 8 && plain8(p_)) p_ += 8;
      if (p_ >= end_) fail("unterminated string");
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        std::string_view out;
        if (escaped) {
          scratch_.append(start, p_);
          out = scratch_;
        } else {
          out = std::string_view(start, static_cast<size_t>(p_ - start));
        }
        ++p_;
        return out;
      }
      if (c < 0x20) fail("control character in a string");
      if (c >= 0x80) {
        const size_t n = utf8_length(reinterpret_cast<const unsigned char*>(p_),
                                     reinterpret_cast<const unsigned char*>(end_));
        if (n == 0) fail("invalid UTF-8 in a string");
        p_ += n;
        continue;
      }
      if (c != '\\') {
        ++p_;
        continue;
      }
      if (!escaped) scratch_.clear();
      escaped = true;
      scratch_.append(start, p_);
      ++p_;
      escape();
      start = p_;
    }
  }

  // Whether none of the 8 bytes at p is '"', '\\', a control character or non-ASCII (the
  // bytes a string needs to look at one by one), with the usual word-at-a-time tests.
  static bool plain8(const char* p) {
    constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
    uint64_t x;
    std::memcpy(&x, p, 8);
    auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
    const uint64_t below_space = (x - kOnes * 0x20) & ~x & kHigh;  // exact for bytes < 0x80
    return ((x & kHigh) | below_space | has_zero(x ^ (kOnes * '"')) |
            has_zero(x ^ (kOnes * '\\'))) == 0;
  }

  void escape() {
    const char c = peek();
    ++p_;
    switch (c) {
      case '"': scratch_.push_back('"'); return;
      case '\\': scratch_.push_back('\\'); return;
      case '/': scratch_.push_back('/'); return;
      case 'b': scratch_.push_back('\b'); return;
      case 'f': scratch_.push_back('\f'); return;
      case 'n': scratch_.push_back('\n'); return;
      case 'r': scratch_.push_back('\r'); return;
      case 't': scratch_.push_back('\t'); return;
      case 'u': break;
      default: --p_, fail("invalid escape in a string");
    }
    uint32_t cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in a string");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') fail("high surrogate without a low one");
      p_ += 2;
      const uint32_t lo = hex4();
      if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate without a low one");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    json_scan_detail::append_utf8(scratch_, cp);
  }

  uint32_t hex4() {
    if (end_ - p_ < 4) fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      const char c = *p_;
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else fail("invalid \\u escape");
    }
    return v;
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  void number() {
    const char* start = p_;
    const bool negative = peek() == '-';
    if (negative) ++p_;
    if (peek() == '0') {
      ++p_;
    } else if (digit(peek())) {
      while (digit(peek())) ++p_;
    } else {
      fail(negative ? "expected a digit after '-'" : "expected a JSON value");
    }
    bool integer = true;
    if (peek() == '.') {
      integer = false;
      ++p_;
      if (!digit(peek())) fail("expected a digit after '.'");
      while (digit(peek())) ++p_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integer = false;
      ++p_;
      if (peek() == '+' || peek() == '-') ++p_;
      if (!digit(peek())) fail("expected a digit in the exponent");
      while (digit(peek())) ++p_;
    }
    if (integer) {
      // Digits only (after the sign); overflow falls back to a float, as nlohmann does.
      uint64_t v = 0;
      bool fits = true;
      for (const char* d = start + (negative ? 1 : 0); d < p_; ++d) {
        const uint64_t digit_value = static_cast<uint64_t>(*d - '0');
        if (v > (UINT64_MAX - digit_value) / 10) {
          fits = false;
          break;
        }
        v = v * 10 + digit_value;
      }
      if (fits && !negative) {
        h_.number_unsigned(v);
        return;
      }
      if (fits && v <= static_cast<uint64_t>(INT64_MAX) + 1) {
        h_.number_integer(v == static_cast<uint64_t>(INT64_MAX) + 1
                              ? INT64_MIN
                              : -static_cast<int64_t>(v));
        return;
      }
    }
    double d = 0;
    const auto [end, ec] = std::from_chars(start, p_, d);
    // Out of range: strtod's answer, as nlohmann (tiny numbers round to 0, huge ones fail).
    if (ec == std::errc::result_out_of_range)
      d = std::strtod(std::string(start, p_).c_str(), nullptr);
    else if (end != p_ || ec != std::errc()) fail("invalid number");
    if (!std::isfinite(d)) {
      p_ = start;
      fail("number overflow");
    }
    h_.number_float(d);
  }

  const char* const begin_;
  const char* p_;
  const char* const end_;
  Handler& h_;
  std::vector<bool> stack_;
  std::string scratch_;
};

}  // namespace kube
