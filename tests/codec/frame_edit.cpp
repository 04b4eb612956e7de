// tests/codec/frame_edit.cpp: rewrites header fields of an hcomm frame file and reseals the
// header checksum, so that the CLI tests can hand hcomm-codec frames whose header is
// well-formed but lies (a forged element count, payload size or parameter).
//
//   frame_edit IN OUT count=1099511627776 [payload_bytes=N] [param=N] [codec=N] [dtype=N]
//
// Values are decimal (up to 2^64 - 1). Exit 0 on success, 1 on I/O failure, 2 on bad usage.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "hcomm/codec/frame.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: frame_edit IN OUT [count=N] [payload_bytes=N] [param=N] [codec=N] [dtype=N]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<unsigned char> f((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.eof() && in.fail()) {
    std::fprintf(stderr, "frame_edit: cannot read %s\n", argv[1]);
    return 1;
  }
  if (f.size() < hcomm::codec::header_bytes) {
    std::fprintf(stderr, "frame_edit: %s is shorter than a frame header\n", argv[1]);
    return 1;
  }
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq + 1 == a.size()) {
      std::fprintf(stderr, "frame_edit: bad edit '%s'\n", argv[i]);
      return 2;
    }
    const std::string key = a.substr(0, eq);
    char* end = nullptr;
    const std::uint64_t v = std::strtoull(a.c_str() + eq + 1, &end, 10);
    if (*end != '\0') {
      std::fprintf(stderr, "frame_edit: bad value in '%s'\n", argv[i]);
      return 2;
    }
    if (key == "count") std::memcpy(f.data() + 16, &v, 8);
    else if (key == "payload_bytes") std::memcpy(f.data() + 24, &v, 8);
    else if (key == "param") {
      const auto p = static_cast<std::uint32_t>(v);
      std::memcpy(f.data() + 8, &p, 4);
    } else if (key == "codec") f[6] = static_cast<unsigned char>(v);
    else if (key == "dtype") f[7] = static_cast<unsigned char>(v);
    else {
      std::fprintf(stderr, "frame_edit: unknown field '%s'\n", key.c_str());
      return 2;
    }
  }
  const std::uint64_t h = hcomm::hash64(f.data(), 56, 0);
  std::memcpy(f.data() + 56, &h, 8);
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "frame_edit: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
