// sha256 digests for the content store (OCI image-spec descriptor.md:
// "sha256:" followed by 64 lower-case hex digits). Hashing is nettle's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sbx::oci {

/// Incremental sha256. Feed bytes with update(), then hex() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  /// 64 lower-case hex digits. Finalises: call once.
  std::string hex();
  /// Bytes fed so far.
  uint64_t size() const { return size_; }

 private:
  alignas(8) unsigned char ctx_[128];  // struct sha256_ctx (kept out of this header)
  uint64_t size_ = 0;
};

/// sha256 of `data` as 64 hex digits.
std::string sha256_hex(std::string_view data);

/// sha256 of a whole file as 64 hex digits; throws sbx::Error naming the path.
std::string sha256_file_hex(const std::string& path);

/// True for exactly 64 lower-case hex digits.
bool is_sha256_hex(std::string_view s);

/// True for "sha256:" + 64 lower-case hex digits.
bool is_sha256_digest(std::string_view s);

/// The hex part of a "sha256:<hex>" digest. Throws sbx::Error ("<what>: 'x' is
/// not a sha256 digest") for anything else, including other algorithms.
std::string digest_hex(std::string_view digest, std::string_view what = "digest");

}  // namespace sbx::oci
