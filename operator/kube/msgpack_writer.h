// Appends MessagePack to a byte string exactly as nlohmann::json::to_msgpack encodes the same
// JSON value (smallest integer, string and container forms; floats as float32 when that is
// exact), so values written from a SAX pass are byte for byte what to_msgpack of the DOM gives.
// Containers whose size is not known up front get a one-byte header that close() patches,
// widening it in place only for more than 15 elements.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

namespace kube::msgpack {

template <typename T>
void put_be(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  for (size_t i = sizeof(T); i-- > 0;) out.push_back(static_cast<char>(b[i]));
}

inline void put_byte(std::string& out, unsigned v) { out.push_back(static_cast<char>(v)); }

inline void write_nil(std::string& out) { put_byte(out, 0xC0); }
inline void write_bool(std::string& out, bool v) { put_byte(out, v ? 0xC3 : 0xC2); }

inline void write_uint(std::string& out, uint64_t v) {
  if (v < 128) {
    put_byte(out, static_cast<unsigned>(v));
  } else if (v <= UINT8_MAX) {
    put_byte(out, 0xCC);
    put_be(out, static_cast<uint8_t>(v));
  } else if (v <= UINT16_MAX) {
    put_byte(out, 0xCD);
    put_be(out, static_cast<uint16_t>(v));
  } else if (v <= UINT32_MAX) {
    put_byte(out, 0xCE);
    put_be(out, static_cast<uint32_t>(v));
  } else {
    put_byte(out, 0xCF);
    put_be(out, v);
  }
}

inline void write_int(std::string& out, int64_t v) {
  if (v >= 0) {
    write_uint(out, static_cast<uint64_t>(v));
  } else if (v >= -32) {
    put_be(out, static_cast<int8_t>(v));
  } else if (v >= INT8_MIN) {
    put_byte(out, 0xD0);
    put_be(out, static_cast<int8_t>(v));
  } else if (v >= INT16_MIN) {
    put_byte(out, 0xD1);
    put_be(out, static_cast<int16_t>(v));
  } else if (v >= INT32_MIN) {
    put_byte(out, 0xD2);
    put_be(out, static_cast<int32_t>(v));
  } else {
    put_byte(out, 0xD3);
    put_be(out, v);
  }
}

inline void write_float(std::string& out, double v) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfloat-equal"
  const bool as_float = v >= static_cast<double>(std::numeric_limits<float>::lowest()) &&
                        v <= static_cast<double>(std::numeric_limits<float>::max()) &&
                        static_cast<double>(static_cast<float>(v)) == v;
#pragma GCC diagnostic pop
  if (as_float) {
    put_byte(out, 0xCA);
    put_be(out, static_cast<float>(v));
  } else {
    put_byte(out, 0xCB);
    put_be(out, v);
  }
}

inline void write_str(std::string& out, std::string_view s) {
  const size_t n = s.size();
  if (n <= 31) {
    put_byte(out, 0xA0 | static_cast<unsigned>(n));
  } else if (n <= UINT8_MAX) {
    put_byte(out, 0xD9);
    put_be(out, static_cast<uint8_t>(n));
  } else if (n <= UINT16_MAX) {
    put_byte(out, 0xDA);
    put_be(out, static_cast<uint16_t>(n));
  } else {
    put_byte(out, 0xDB);
    put_be(out, static_cast<uint32_t>(n));
  }
  out.append(s);
}

// Reserves a container header at the end of out; returns its position for close().
inline size_t open(std::string& out) {
  out.push_back('\0');
  return out.size() - 1;
}

// Writes the header reserved at pos for a map (or array) of n elements.
inline void close(std::string& out, size_t pos, size_t n, bool map) {
  if (n <= 15) {
    out[pos] = static_cast<char>((map ? 0x80 : 0x90) | n);
    return;
  }
  std::string wide;
  if (n <= UINT16_MAX) {
    put_byte(wide, map ? 0xDE : 0xDC);
    put_be(wide, static_cast<uint16_t>(n));
  } else {
    put_byte(wide, map ? 0xDF : 0xDD);
    put_be(wide, static_cast<uint32_t>(n));
  }
  out.replace(pos, 1, wide);
}

}  // namespace kube::msgpack
