#include "oci/digest.h"

#include <fcntl.h>
#include <nettle/sha2.h>
#include <unistd.h>

#include <cerrno>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"

namespace sbx::oci {

static_assert(sizeof(sha256_ctx) <= 128, "Sha256::ctx_ too small for nettle's sha256_ctx");

Sha256::Sha256() { sha256_init(reinterpret_cast<sha256_ctx*>(ctx_)); }

void Sha256::update(const void* data, size_t len) {
  sha256_update(reinterpret_cast<sha256_ctx*>(ctx_), len, static_cast<const uint8_t*>(data));
  size_ += len;
}

std::string Sha256::hex() {
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_digest(reinterpret_cast<sha256_ctx*>(ctx_), sizeof d, d);
  static const char* kHex = "0123456789abcdef";
  std::string out(2 * sizeof d, '0');
  for (size_t i = 0; i < sizeof d; ++i) {
    out[2 * i] = kHex[d[i] >> 4];
    out[2 * i + 1] = kHex[d[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex();
}

std::string sha256_file_hex(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) throw_errno("open " + path + " to hash it");
  Sha256 h;
  fs::read_fd(f.fd, path, [&h](std::string_view chunk) { h.update(chunk); });
  return h.hex();
}

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_sha256_digest(std::string_view s) {
  return s.size() == 71 && s.substr(0, 7) == "sha256:" && is_sha256_hex(s.substr(7));
}

std::string digest_hex(std::string_view digest, std::string_view what) {
  if (!is_sha256_digest(digest))
    throw Error(std::string(what) + ": '" + std::string(digest.substr(0, 100)) +
                "' is not a sha256 digest (expected sha256: and 64 lower-case hex digits)");
  return std::string(digest.substr(7));
}

}  // namespace sbx::oci
