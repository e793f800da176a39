#include "gpu/ldcache.h"

#include <cstring>

#include "common/error.h"

namespace sbx::gpu {

namespace {

constexpr std::string_view kMagicNew = "glibc-ld.so.cache";
constexpr std::string_view kVersionNew = "1.1";
constexpr std::string_view kMagicOld = "ld.so-1.7.0";
constexpr size_t kHeaderNew = 48;
constexpr size_t kEntryNew = 24;
constexpr size_t kEntryOld = 12;
constexpr int32_t kFlagTypeMask = 0x00ff;
constexpr int32_t kFlagElfLibc6 = 0x0003;
constexpr int32_t kFlagArchMask = 0xff00;
constexpr int32_t kFlagX8664Lib64 = 0x0300;
constexpr int32_t kFlagAarch64Lib64 = 0x0a00;

template <class T>
T load(std::string_view d, size_t off) {
  T v;
  std::memcpy(&v, d.data() + off, sizeof v);
  return v;
}

[[noreturn]] void bad(const std::string& what, const std::string& why) {
  throw Error(what + ": not a valid ld.so.cache (" + why + "); regenerate it with 'ldconfig'");
}

// A NUL-terminated string at `off` (from `base`) that must end inside `d`.
std::string cstr(std::string_view d, size_t base, uint32_t off, const std::string& what) {
  size_t start = base + off;
  if (start >= d.size()) bad(what, "string offset out of range");
  size_t end = d.find('\0', start);
  if (end == std::string_view::npos) bad(what, "unterminated string");
  return std::string(d.substr(start, end - start));
}

std::vector<LdCacheEntry> parse_new(std::string_view d, size_t base, const std::string& what) {
  if (d.size() < base + kHeaderNew) bad(what, "truncated header");
  if (d.substr(base + kMagicNew.size(), kVersionNew.size()) != kVersionNew)
    bad(what, "unknown version '" + std::string(d.substr(base + kMagicNew.size(), 3)) + "'");
  uint32_t n = load<uint32_t>(d, base + 20);
  if (n > (d.size() - base - kHeaderNew) / kEntryNew) bad(what, "entry count exceeds file size");
  std::vector<LdCacheEntry> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    size_t e = base + kHeaderNew + i * kEntryNew;
    LdCacheEntry le;
    le.flags = load<int32_t>(d, e);
    le.soname = cstr(d, base, load<uint32_t>(d, e + 4), what);
    le.path = cstr(d, base, load<uint32_t>(d, e + 8), what);
    out.push_back(std::move(le));
  }
  return out;
}

}  // namespace

std::vector<LdCacheEntry> parse_ldcache(std::string_view d, const std::string& what) {
  if (d.substr(0, kMagicNew.size()) == kMagicNew) return parse_new(d, 0, what);
  if (d.substr(0, kMagicOld.size()) != kMagicOld) bad(what, "unknown magic");
  if (d.size() < 16) bad(what, "truncated header");
  uint32_t n = load<uint32_t>(d, 12);
  if (n > (d.size() - 16) / kEntryOld) bad(what, "entry count exceeds file size");
  size_t strings = 16 + size_t{n} * kEntryOld;
  // glibc aligns the new header that may follow to alignof(struct cache_file_new).
  size_t next = (strings + 7) & ~size_t{7};
  if (d.size() >= next + kHeaderNew && d.substr(next, kMagicNew.size()) == kMagicNew)
    return parse_new(d, next, what);
  std::vector<LdCacheEntry> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    size_t e = 16 + i * kEntryOld;
    LdCacheEntry le;
    le.flags = load<int32_t>(d, e);
    le.soname = cstr(d, strings, load<uint32_t>(d, e + 4), what);
    le.path = cstr(d, strings, load<uint32_t>(d, e + 8), what);
    out.push_back(std::move(le));
  }
  return out;
}

std::vector<LdCacheEntry> native_entries(const std::vector<LdCacheEntry>& all) {
#if defined(__x86_64__)
  const int32_t arch = kFlagX8664Lib64;
#elif defined(__aarch64__)
  const int32_t arch = kFlagAarch64Lib64;
#else
  const int32_t arch = 0;
#endif
  std::vector<LdCacheEntry> out;
  for (const auto& e : all)
    if ((e.flags & kFlagTypeMask) == kFlagElfLibc6 && (e.flags & kFlagArchMask) == arch) out.push_back(e);
  return out;
}

}  // namespace sbx::gpu
