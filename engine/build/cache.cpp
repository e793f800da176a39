#include "engine/build/cache.h"

#include <dirent.h>

#include <atomic>
#include <fcntl.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fs.h"
#include "oci/digest.h"

namespace sbx::build {

namespace {

/// Bumped when what a key means changes (old entries then never match).
constexpr const char* kKeyVersion = "sbx-build-cache-1";

std::atomic<unsigned> tmp_counter{0};  ///< temp names of one process's entries (threads of a server)

}  // namespace

CacheKey CacheKey::from(const std::string& base) {
  CacheKey k;
  k.add("version", kKeyVersion);
  k.add("base", base);
  return k;
}

CacheKey CacheKey::after(const std::string& parent) {
  CacheKey k;
  k.add("version", kKeyVersion);
  k.add("parent", parent);
  return k;
}

CacheKey& CacheKey::add(std::string_view name, std::string_view value) {
  text_ += std::to_string(name.size()) + ":" + std::string(name) + "=" + std::to_string(value.size()) + ":" +
           std::string(value) + "\n";
  return *this;
}

std::string CacheKey::hex() const { return oci::sha256_hex(text_); }

BuildCache::BuildCache(oci::Store& store) : store_(store), dir_(store.root() + "/build-cache") {}

std::optional<oci::ImageRecord> BuildCache::lookup(const std::string& key) const {
  std::string id;
  try {
    id = fs::read_file(dir_ + "/" + key);
  } catch (const Error&) {
    return std::nullopt;
  }
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  if (!oci::is_sha256_hex(id)) return std::nullopt;
  try {
    oci::ImageRecord r = store_.resolve(id);
    if (r.id == id) return r;
  } catch (const Error&) {
  }
  ::unlink((dir_ + "/" + key).c_str());  // its image is gone
  return std::nullopt;
}

void BuildCache::store(const std::string& key, const std::string& image_id) {
  fs::mkdir_p(dir_, 0700);
  // Temp file + rename, without fsync: an entry whose image did not reach
  // the disk before a crash is a miss (lookup checks the store), not an error.
  const std::string path = dir_ + "/" + key, tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++tmp_counter);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno("write the build cache entry " + tmp);
  try {
    fs::write_all(fd, image_id + "\n", tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) < 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw_errno("write the build cache entry " + path, e);
  }
}

size_t BuildCache::prune() {
  size_t n = 0;
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return 0;
  std::vector<std::string> keys;
  while (dirent* de = ::readdir(d)) {
    std::string k = de->d_name;
    if (oci::is_sha256_hex(k)) keys.push_back(k);
  }
  ::closedir(d);
  for (const auto& k : keys)
    if (!lookup(k)) ++n;
  return n;
}

}  // namespace sbx::build
