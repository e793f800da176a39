// Reader of glibc's dynamic linker cache, /etc/ld.so.cache (what `ldconfig -p`
// prints), used to find the NVIDIA driver libraries the way the host's own
// programs find them.
//
// Format followed (glibc sysdeps/generic/dl-cache.h, glibc >= 2.32 writes only
// the "new" format by default; older glibc wrote the old one followed by the
// new one):
//   new: "glibc-ld.so.cache" "1.1", u32 nlibs, u32 len_strings, u8 flags,
//        u8[3] pad, u32 extension_offset, u32[3] unused (48 bytes), then nlibs
//        entries of { i32 flags, u32 key, u32 value, u32 osversion, u64 hwcap }
//        (24 bytes); key/value are offsets of NUL-terminated strings from the
//        start of the new header.
//   old: "ld.so-1.7.0", u32 nlibs (at offset 12), nlibs entries of
//        { i32 flags, u32 key, u32 value } (12 bytes), then the string table
//        (offsets relative to its start). A new header may follow the old
//        entries, aligned to 8 bytes; it is then preferred.
// Host byte order only (the cache is written by the host's ldconfig).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::gpu {

struct LdCacheEntry {
  std::string soname;  ///< the key, e.g. "libcuda.so.1"
  std::string path;    ///< the value, e.g. "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
  int32_t flags = 0;   ///< FLAG_ELF_LIBC6 (0x3) | arch bits (0x0300 x86-64, 0x0a00 aarch64, ...)
};

/// Parses the bytes of an ld.so.cache. Throws sbx::Error ("<what>: not an
/// ld.so.cache ...") on a bad magic or an offset outside the data. `what`
/// names the file in errors.
std::vector<LdCacheEntry> parse_ldcache(std::string_view data, const std::string& what);

/// Only the entries usable by this process's ABI (libc6 ELF, this
/// architecture's 64-bit flag on x86-64/aarch64), in cache order.
std::vector<LdCacheEntry> native_entries(const std::vector<LdCacheEntry>& all);

}  // namespace sbx::gpu
