#include "runtime/native/criu_image.h"

#include <dirent.h>

#include <cstring>

#include "common/error.h"
#include "common/fs.h"

namespace sbx::runtime {

namespace {

constexpr uint32_t kImgCommonMagic = 0x54564319;  // criu/include/magic.h
constexpr uint32_t kUsernsMagic = 0x55474906;

uint32_t le32(const std::string& b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

void put_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// A protobuf varint at b[i] (i advances). Throws on truncation or > 64 bits.
uint64_t varint(const std::string& b, size_t& i, size_t end) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (i >= end) throw Error("CRIU userns image: truncated varint");
    auto c = static_cast<unsigned char>(b[i++]);
    v |= uint64_t(c & 0x7f) << shift;
    if (c < 0x80) return v;
  }
  throw Error("CRIU userns image: varint longer than 64 bits");
}

void put_varint(std::string& out, uint64_t v) {
  do {
    unsigned char c = v & 0x7f;
    v >>= 7;
    out.push_back(static_cast<char>(v ? c | 0x80 : c));
  } while (v);
}

/// Skips a field of wire type `wt` (unknown fields are skipped, as protobuf does).
void skip(const std::string& b, size_t& i, size_t end, uint64_t wt) {
  switch (wt) {
    case 0: varint(b, i, end); return;
    case 1: i += 8; break;
    case 2: i += varint(b, i, end); break;
    case 5: i += 4; break;
    default: throw Error("CRIU userns image: unsupported protobuf wire type " + std::to_string(wt));
  }
  if (i > end) throw Error("CRIU userns image: truncated field");
}

CriuIdExtent parse_extent(const std::string& b, size_t i, size_t end) {
  CriuIdExtent e;
  unsigned seen = 0;
  while (i < end) {
    uint64_t key = varint(b, i, end);
    uint64_t field = key >> 3, wt = key & 7;
    if (wt == 0 && field >= 1 && field <= 3) {
      uint64_t v = varint(b, i, end);
      if (v > UINT32_MAX) throw Error("CRIU userns image: id " + std::to_string(v) + " out of range");
      (field == 1 ? e.first : field == 2 ? e.lower_first : e.count) = static_cast<uint32_t>(v);
      seen |= 1u << field;
    } else {
      skip(b, i, end, wt);
    }
  }
  if (seen != 0xe) throw Error("CRIU userns image: an id extent lacks first, lower_first or count");
  return e;
}

void encode_extent(std::string& out, uint32_t field, const CriuIdExtent& e) {
  std::string m;
  for (auto [f, v] : {std::pair<uint32_t, uint32_t>{1, e.first}, {2, e.lower_first}, {3, e.count}}) {
    put_varint(m, f << 3);
    put_varint(m, v);
  }
  put_varint(out, (field << 3) | 2);
  put_varint(out, m.size());
  out += m;
}

}  // namespace

CriuUsernsMaps parse_criu_userns_image(const std::string& b) {
  if (b.size() < 12 || le32(b, 0) != kImgCommonMagic || le32(b, 4) != kUsernsMagic)
    throw Error("not a CRIU userns image (wrong magic)");
  CriuUsernsMaps m;
  size_t at = 8;
  // One userns_entry; CRIU writes exactly one, but read what is there.
  while (at < b.size()) {
    if (b.size() - at < 4) throw Error("CRIU userns image: truncated entry size");
    uint32_t n = le32(b, at);
    at += 4;
    if (n > b.size() - at) throw Error("CRIU userns image: entry of " + std::to_string(n) + " bytes is truncated");
    size_t i = at, end = at + n;
    while (i < end) {
      uint64_t key = varint(b, i, end);
      uint64_t field = key >> 3, wt = key & 7;
      if ((field == 1 || field == 2) && wt == 2) {
        uint64_t len = varint(b, i, end);
        if (len > end - i) throw Error("CRIU userns image: truncated id extent");
        (field == 1 ? m.uid : m.gid).push_back(parse_extent(b, i, i + len));
        i += len;
      } else {
        skip(b, i, end, wt);
      }
    }
    at = end;
  }
  return m;
}

std::string encode_criu_userns_image(const CriuUsernsMaps& m) {
  std::string body;
  for (const auto& e : m.uid) encode_extent(body, 1, e);
  for (const auto& e : m.gid) encode_extent(body, 2, e);
  std::string out;
  put_le32(out, kImgCommonMagic);
  put_le32(out, kUsernsMagic);
  put_le32(out, static_cast<uint32_t>(body.size()));
  return out + body;
}

int remap_criu_userns_images(const std::string& dir, uint32_t from, uint32_t to, uint32_t count) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw_errno("open the CRIU image directory " + dir);
  std::vector<std::string> files;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind("userns-", 0) == 0 && n.size() > 11 && n.compare(n.size() - 4, 4, ".img") == 0) files.push_back(n);
  }
  ::closedir(d);
  int moved = 0;
  const uint64_t from_end = uint64_t(from) + count;
  for (const auto& f : files) {
    const std::string path = dir + "/" + f;
    CriuUsernsMaps m;
    try {
      m = parse_criu_userns_image(fs::read_file(path));
    } catch (const Error& e) {
      throw Error(path + ": " + e.what() + "; the checkpoint is damaged");
    }
    for (auto* v : {&m.uid, &m.gid})
      for (auto& e : *v) {
        const uint64_t lo = e.lower_first, hi = lo + e.count;
        if (hi <= from || lo >= from_end) continue;  // not the sandbox's host range
        if (lo < from || hi > from_end)
          throw Error(path + ": the id extent " + std::to_string(e.first) + " " + std::to_string(lo) + " " +
                      std::to_string(e.count) + " lies partly outside the sandbox's host ids " + std::to_string(from) +
                      "+" + std::to_string(count));
        e.lower_first = static_cast<uint32_t>(lo - from + to);
        ++moved;
      }
    fs::write_file_atomic(path, encode_criu_userns_image(m), 0600);
  }
  return moved;
}

}  // namespace sbx::runtime
