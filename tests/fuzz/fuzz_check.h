// What every fuzz target shares: FUZZ_CHECK, an invariant that holds for every input. A broken
// one prints what broke and aborts, which libFuzzer reports as a crash and saves the input
// (crash-<sha1>); the replay driver (replay_main.cc) stops the same way. assert() is not used:
// NDEBUG builds would drop it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(cond, ...)                                                         \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n  %s\n", __FILE__, __LINE__, \
                   #cond, std::string(__VA_ARGS__).c_str());                          \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)

namespace fuzz {

// The input's first bytes, printable, for FUZZ_CHECK messages.
inline std::string excerpt(const std::string& s, size_t max = 200) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return s.size() > max ? out + "..." : out;
}

// Takes bytes off the front of a fuzz input to build structured values (FuzzedDataProvider's
// idea, without clang's header, so the targets also build with g++ for the corpus replay).
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : p_(data), left_(size) {}
  size_t left() const { return left_; }
  template <typename T>
  T pod() {
    T v{};
    unsigned char* out = reinterpret_cast<unsigned char*>(&v);
    for (size_t i = 0; i < sizeof(T) && left_ > 0; ++i, ++p_, --left_) out[i] = *p_;
    return v;
  }
  size_t count(size_t max) { return left_ == 0 ? 0 : pod<uint8_t>() % (max + 1); }
  std::string str(size_t max) {
    const size_t n = std::min(count(max), left_);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    left_ -= n;
    return s;
  }

 private:
  const uint8_t* p_;
  size_t left_;
};

}  // namespace fuzz
