// `sbx import`: OCI image layout directories, oci-archives and docker-archives
// into the store. Specs: OCI image-spec image-layout.md, manifest.md,
// config.md (diff ids, chain ids), layer.md; docker-archive is the format of
// `docker save` (manifest.json with Config, RepoTags, Layers).
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/digest.h"
#include "oci/index.h"
#include "oci/reference.h"
#include "oci/store.h"
#include "oci/tree.h"
#include "oci/unpack.h"

namespace sbx::oci {
namespace {

using json = nlohmann::json;
constexpr uint64_t kMaxJson = 4 << 20;  // manifests, configs, indexes (podman's limit too)
constexpr size_t kMaxLayers = 500;
constexpr size_t kMaxMembers = 1 << 20;
constexpr uint64_t kMaxArchiveBytes = 64ull << 30;  // unpacked members of one archive (bombs)
constexpr size_t kBuf = 256 * 1024;

const char* kOciManifest = "application/vnd.oci.image.manifest.v1+json";
const char* kOciIndex = "application/vnd.oci.image.index.v1+json";
const char* kOciConfig = "application/vnd.oci.image.config.v1+json";
const char* kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
const char* kDockerList = "application/vnd.docker.distribution.manifest.list.v2+json";

bool supported_layer_type(const std::string& t) {
  static const char* ok[] = {
      "application/vnd.oci.image.layer.v1.tar",
      "application/vnd.oci.image.layer.v1.tar+gzip",
      "application/vnd.oci.image.layer.v1.tar+zstd",
      "application/vnd.oci.image.layer.nondistributable.v1.tar",
      "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
      "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
      "application/vnd.docker.image.rootfs.diff.tar.gzip",
      "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
  };
  for (const char* s : ok)
    if (t == s) return true;
  return false;
}

void write_all(int fd, const char* p, size_t n, const std::string& path) { fs::write_all(fd, {p, n}, path); }

std::string now_rfc3339() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm;
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json parse_json(const std::string& text, const std::string& what) {
  try {
    json j = json::parse(text);
    if (!j.is_object() && !j.is_array()) throw Error(what + " is not a JSON object");
    return j;
  } catch (const json::exception& e) {
    // Not only parse_error: a number such as 1e400 throws out_of_range
    // (found by tests/fuzz/fuzz_image_json).
    throw Error(what + " is not valid JSON (" + e.what() + "); the image is corrupt");
  }
}

// Reads a required field with a clear error.
template <class T>
T field(const json& j, const char* key, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end()) throw Error(what + " has no \"" + key + "\" field; the image is corrupt");
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw Error(what + ": field \"" + key + "\" has the wrong type; the image is corrupt");
  }
}

struct Descriptor {
  std::string media_type, digest;
  int64_t size = -1;
};

Descriptor descriptor(const json& j, const std::string& what) {
  if (!j.is_object()) throw Error(what + " is not a JSON object; the image is corrupt");
  Descriptor d;
  d.media_type = j.value("mediaType", "");
  d.digest = field<std::string>(j, "digest", what);
  digest_hex(d.digest, what);
  d.size = field<int64_t>(j, "size", what);
  if (d.size < 0) throw Error(what + " has a negative size; the image is corrupt");
  return d;
}

// Where the bytes of an image come from: a directory or a tar streamed once
// into temp files. put_blob moves/copies a member into the store verified.
class Source {
 public:
  Source(Store& s, std::string tmp, const ImportOptions& o) : store_(s), tmp_(std::move(tmp)), opts_(o) {}
  virtual ~Source() = default;
  virtual bool has(const std::string& name) = 0;
  /// A small member's bytes (<= 4 MiB). Throws when missing or bigger.
  virtual std::string read_small(const std::string& name, const std::string& what) = 0;
  /// sha256 hex and size of a member.
  virtual std::pair<std::string, uint64_t> digest_of(const std::string& name) = 0;
  /// Ensures blob `hex` is in the store from member `name`; verifies its
  /// sha256 and, when size >= 0, its size. Never writes a stored blob again.
  virtual void put_blob(const std::string& name, const std::string& hex, int64_t size) = 0;

 protected:
  bool stored(const std::string& hex) {
    struct stat st;
    return ::stat((store_.root() + "/blobs/sha256/" + hex).c_str(), &st) == 0;
  }
  // Moves a verified temp file into blobs/ (no replace: first writer wins).
  void commit_blob(const std::string& tmpfile, const std::string& hex) {
    std::string dst = store_.root() + "/blobs/sha256/" + hex;
    {  // durable before it has its final name
      Fd f(::open(tmpfile.c_str(), O_RDONLY | O_CLOEXEC));
      if (f.fd < 0 || ::fsync(f.fd) < 0) throw_errno("fsync " + tmpfile);
    }
    if (::renameat2(AT_FDCWD, tmpfile.c_str(), AT_FDCWD, dst.c_str(), RENAME_NOREPLACE) < 0) {
      if (errno == EEXIST) {
        ::unlink(tmpfile.c_str());
        return;
      }
      throw_errno("move blob into the store at " + dst);
    }
    ::chmod(dst.c_str(), 0444);
  }
  [[noreturn]] void mismatch(const std::string& name, const std::string& hex, const std::string& got, int64_t size,
                             uint64_t got_size) {
    if (got != hex)
      throw Error("blob " + name + " has digest sha256:" + got + " but the manifest says sha256:" + hex +
                  "; the image is corrupt or was tampered with");
    throw Error("blob " + name + " has " + std::to_string(got_size) + " bytes but the manifest says " +
                std::to_string(size) + "; the image is corrupt");
  }
  void progress(const std::string& phase, uint64_t bytes, uint64_t total) {
    if (opts_.progress) opts_.progress(ImportProgress{phase, 0, 0, bytes, total});
  }

  Store& store_;
  std::string tmp_;
  const ImportOptions& opts_;
};

class DirSource : public Source {
 public:
  DirSource(Store& s, std::string dir, std::string tmp, const ImportOptions& o)
      : Source(s, std::move(tmp), o), dir_(std::move(dir)) {}

  bool has(const std::string& name) override {
    struct stat st;
    return ::lstat((dir_ + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }
  std::string read_small(const std::string& name, const std::string& what) override {
    std::string p = dir_ + "/" + name;
    Fd f(::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (f.fd < 0) {
      if (errno == ENOENT) throw Error(what + " (" + p + ") is missing; the image is incomplete", ENOENT);
      throw_errno("open " + p);
    }
    struct stat st;
    if (::fstat(f.fd, &st) < 0) throw_errno("stat " + p);
    if (!S_ISREG(st.st_mode)) throw Error(what + " (" + p + ") is not a regular file");
    if (static_cast<uint64_t>(st.st_size) > kMaxJson) throw Error(what + " (" + p + ") is larger than 4 MiB");
    return fs::read_file(p);
  }
  std::pair<std::string, uint64_t> digest_of(const std::string& name) override {
    std::string p = dir_ + "/" + name;
    struct stat st;
    if (::stat(p.c_str(), &st) < 0) throw_errno("stat " + p);
    return {sha256_file_hex(p), static_cast<uint64_t>(st.st_size)};
  }
  void put_blob(const std::string& name, const std::string& hex, int64_t size) override {
    if (stored(hex)) return;
    std::string src = dir_ + "/" + name;
    Fd in(::open(src.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (in.fd < 0) {
      if (errno == ENOENT)
        throw Error("blob sha256:" + hex + " is referenced by the image but missing from " + dir_ +
                        "; the image is incomplete",
                    ENOENT);
      throw_errno("open blob " + src);
    }
    std::string tmp = tmp_ + "/blob-" + hex;
    Fd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444));
    if (out.fd < 0) throw_errno("create " + tmp);
    Sha256 h;
    std::unique_ptr<char[]> buf(new char[kBuf]);
    for (;;) {
      ssize_t n = ::read(in.fd, buf.get(), kBuf);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw_errno("read blob " + src);
      }
      if (n == 0) break;
      h.update(buf.get(), static_cast<size_t>(n));
      // Bounded by the descriptor: a bigger file cannot be the blob.
      if (size >= 0 && h.size() > static_cast<uint64_t>(size)) mismatch(src, hex, "(too long)", size, h.size());
      write_all(out.fd, buf.get(), static_cast<size_t>(n), tmp);
      progress("copying", h.size(), size >= 0 ? static_cast<uint64_t>(size) : 0);
    }
    std::string got = h.hex();
    if (got != hex || (size >= 0 && h.size() != static_cast<uint64_t>(size))) mismatch(src, hex, got, size, h.size());
    commit_blob(tmp, hex);
  }

 private:
  std::string dir_;
};

// A tar (oci-archive or docker-archive, itself plain, gzip or zstd) streamed
// once: each member lands in a temp file with its sha256 computed on the way.
class TarSource : public Source {
 public:
  TarSource(Store& s, const std::string& path, std::string tmp, const ImportOptions& o)
      : Source(s, std::move(tmp), o), path_(path) {
    struct stat st;
    uint64_t total = ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), archive_read_free);
    archive_read_support_filter_gzip(a.get());
    archive_read_support_filter_zstd(a.get());
    archive_read_support_format_tar(a.get());
    if (archive_read_open_filename(a.get(), path.c_str(), kBuf) != ARCHIVE_OK)
      fail(a.get(), "open");
    std::unique_ptr<char[]> buf(new char[kBuf]);
    uint64_t all = 0;
    for (size_t n = 0;; ++n) {
      archive_entry* e;
      int r = archive_read_next_header(a.get(), &e);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) fail(a.get(), "read");
      if (n > kMaxMembers) throw Error("archive " + path_ + " has more than " + std::to_string(kMaxMembers) + " members");
      std::string name = norm(archive_entry_pathname(e));
      if (name.empty()) continue;
      Member m;
      if (const char* hl = archive_entry_hardlink(e)) {
        m.link = norm(hl);
      } else if (archive_entry_filetype(e) == AE_IFLNK) {
        const char* t = archive_entry_symlink(e);
        std::string target = t ? t : "";
        std::string dir = name.find('/') == std::string::npos ? "" : name.substr(0, name.rfind('/') + 1);
        m.link = norm(((target.size() && target[0] == '/') ? target : dir + target).c_str());
      } else if (archive_entry_filetype(e) == AE_IFREG && name.rfind("blobs/sha256/", 0) == 0 &&
                 is_sha256_hex(name.substr(13)) && stored(name.substr(13))) {
        // Already in the store (verified when it was written): skip its bytes.
        m.hex = name.substr(13);
        m.tmp = store_.root() + "/blobs/sha256/" + m.hex;
        struct stat bst;
        m.size = ::stat(m.tmp.c_str(), &bst) == 0 ? static_cast<uint64_t>(bst.st_size) : 0;
        if (archive_read_data_skip(a.get()) != ARCHIVE_OK) fail(a.get(), "read member " + name + " of");
      } else if (archive_entry_filetype(e) == AE_IFREG) {
        m.tmp = tmp_ + "/m" + std::to_string(n);
        Fd out(::open(m.tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
        if (out.fd < 0) throw_errno("create " + m.tmp);
        Sha256 h;
        for (;;) {
          la_ssize_t k = archive_read_data(a.get(), buf.get(), kBuf);
          if (k < 0) fail(a.get(), "read member " + name + " of");
          if (k == 0) break;
          h.update(buf.get(), static_cast<size_t>(k));
          if ((all += static_cast<uint64_t>(k)) > kMaxArchiveBytes)
            throw Error("archive " + path_ + " unpacks to more than 64 GiB; refusing it");
          write_all(out.fd, buf.get(), static_cast<size_t>(k), m.tmp);
          progress("reading", static_cast<uint64_t>(archive_filter_bytes(a.get(), -1)), total);
        }
        m.size = h.size();
        m.hex = h.hex();
      } else {
        continue;  // directories carry nothing we need
      }
      members_[name] = std::move(m);
    }
  }

  bool has(const std::string& name) override { return find(name) != nullptr; }

  std::string read_small(const std::string& name, const std::string& what) override {
    Member* m = find(name);
    if (!m) throw Error(what + " (" + name + ") is missing from " + path_ + "; the image is incomplete", ENOENT);
    if (m->size > kMaxJson) throw Error(what + " (" + name + " in " + path_ + ") is larger than 4 MiB");
    return fs::read_file(m->tmp);
  }
  std::pair<std::string, uint64_t> digest_of(const std::string& name) override {
    Member* m = find(name);
    if (!m) throw Error("member " + name + " is referenced but missing from " + path_ + "; the image is incomplete", ENOENT);
    return {m->hex, m->size};
  }
  void put_blob(const std::string& name, const std::string& hex, int64_t size) override {
    Member* m = find(name);
    if (!m)
      throw Error("blob sha256:" + hex + " (" + name + ") is referenced by the image but missing from " + path_ +
                      "; the image is incomplete",
                  ENOENT);
    if (m->hex != hex || (size >= 0 && m->size != static_cast<uint64_t>(size)))
      mismatch(name + " in " + path_, hex, m->hex, size, m->size);
    if (stored(hex)) return;
    commit_blob(m->tmp, hex);
    m->tmp = store_.root() + "/blobs/sha256/" + hex;
  }

 private:
  struct Member {
    std::string tmp, hex, link;
    uint64_t size = 0;
  };
  [[noreturn]] void fail(archive* a, const std::string& what) {
    const char* m = archive_error_string(a);
    throw Error(what + " archive " + path_ + ": " + (m ? m : "error") +
                " (truncated or not a tar archive); nothing was imported");
  }
  static std::string norm(const char* p) {
    std::string s = p ? p : "";
    std::string out;
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find('/', i);
      if (j == std::string::npos) j = s.size();
      std::string c = s.substr(i, j - i);
      if (c == "..") {
        size_t k = out.rfind('/');
        out = k == std::string::npos ? "" : out.substr(0, k);
      } else if (!c.empty() && c != ".") {
        out += (out.empty() ? "" : "/") + c;
      }
      i = j + 1;
    }
    return out;
  }
  Member* find(const std::string& name) {
    std::string n = norm(name.c_str());
    for (int depth = 0; depth < 16; ++depth) {
      auto it = members_.find(n);
      if (it == members_.end()) return nullptr;
      if (it->second.link.empty()) return &it->second;
      n = it->second.link;
    }
    return nullptr;
  }

  std::string path_;
  std::map<std::string, Member> members_;
};

// What a format yields before the common checks and unpacking.
struct Parsed {
  std::string manifest_hex;
  std::string config_hex;
  std::string config_bytes;
  std::vector<Descriptor> layers;  // digests as stored in the store
  std::string default_name;        // from the archive, may be empty
  std::vector<std::string> more_names;  // docker-archive: its other RepoTags (`docker save a b` of one image)
};

void check_manifest_media(const std::string& t, const std::string& what) {
  if (!t.empty() && t != kOciManifest && t != kDockerManifest)
    throw Error(what + " has media type " + t + ", not an image manifest");
}

// Picks the image manifest from an OCI index: the only one, or the one for
// linux/amd64 (the host), descending into nested indexes.
Descriptor pick_manifest(Source& src, const json& index, const std::string& what, int depth, std::string* ref_name) {
  auto ms = index.find("manifests");
  if (ms == index.end() || !ms->is_array() || ms->empty())
    throw Error(what + " lists no manifests; the image is empty or corrupt");
  std::vector<std::pair<Descriptor, json>> cands;
  for (const auto& m : *ms) cands.emplace_back(descriptor(m, what + " manifest entry"), m);
  const std::pair<Descriptor, json>* best = nullptr;
  for (const auto& c : cands) {
    const json& p = c.second.value("platform", json::object());
    bool host = p.value("os", "linux") == "linux" && p.value("architecture", "amd64") == "amd64";
    if (host) {
      best = &c;
      break;
    }
  }
  if (!best) throw Error(what + " has no image for linux/amd64");
  if (best->first.media_type == kOciIndex || best->first.media_type == kDockerList) {
    if (depth >= 2) throw Error(what + " nests image indexes too deeply");
    std::string hex = digest_hex(best->first.digest);
    if (best->first.size > static_cast<int64_t>(kMaxJson)) throw Error(what + ": nested index larger than 4 MiB");
    std::string name = "blobs/sha256/" + hex;
    src.put_blob(name, hex, best->first.size);
    json nested = parse_json(src.read_small(name, "nested index"), "nested index sha256:" + hex);
    return pick_manifest(src, nested, "nested index sha256:" + hex, depth + 1, ref_name);
  }
  check_manifest_media(best->first.media_type, what + " manifest entry");
  if (best->second.contains("annotations") && best->second["annotations"].is_object())
    *ref_name = best->second["annotations"].value("org.opencontainers.image.ref.name", "");
  return best->first;
}

Parsed parse_oci(Source& src, const std::string& path) {
  json layout = parse_json(src.read_small("oci-layout", "oci-layout file"), path + "/oci-layout");
  std::string v = layout.is_object() ? layout.value("imageLayoutVersion", "") : "";
  if (v.rfind("1.", 0) != 0) throw Error(path + ": oci-layout has imageLayoutVersion '" + v + "', expected 1.x");
  json index = parse_json(src.read_small("index.json", "index.json"), path + "/index.json");
  if (!index.is_object()) throw Error(path + "/index.json is not a JSON object; the image is corrupt");
  std::string ref_name;
  Descriptor md = pick_manifest(src, index, path + "/index.json", 0, &ref_name);
  if (md.size > static_cast<int64_t>(kMaxJson)) throw Error("manifest " + md.digest + " is larger than 4 MiB");
  Parsed p;
  p.manifest_hex = digest_hex(md.digest);
  std::string mname = "blobs/sha256/" + p.manifest_hex;
  src.put_blob(mname, p.manifest_hex, md.size);
  std::string what = "manifest " + md.digest;
  json man = parse_json(src.read_small(mname, "manifest"), what);
  if (!man.is_object()) throw Error(what + " is not a JSON object; the image is corrupt");
  if (man.value("schemaVersion", 0) != 2) throw Error(what + " has no schemaVersion 2; the image is corrupt");
  check_manifest_media(man.value("mediaType", ""), what);
  Descriptor cd = descriptor(field<json>(man, "config", what), what + " config");
  if (cd.size > static_cast<int64_t>(kMaxJson)) throw Error("config " + cd.digest + " is larger than 4 MiB");
  p.config_hex = digest_hex(cd.digest);
  src.put_blob("blobs/sha256/" + p.config_hex, p.config_hex, cd.size);
  p.config_bytes = src.read_small("blobs/sha256/" + p.config_hex, "config");
  json layers = field<json>(man, "layers", what);
  if (!layers.is_array()) throw Error(what + ": \"layers\" is not an array; the image is corrupt");
  if (layers.size() > kMaxLayers) throw Error(what + " has more than 500 layers");
  for (const auto& l : layers) {
    Descriptor d = descriptor(l, what + " layer");
    if (!d.media_type.empty() && !supported_layer_type(d.media_type))
      throw Error(what + ": layer " + d.digest + " has media type " + d.media_type +
                  ", which sbx cannot unpack (supported: tar, tar+gzip, tar+zstd)");
    p.layers.push_back(d);
  }
  // ref.name is a tag ("latest") or a full reference ("busybox:1.36").
  if (!ref_name.empty() && (ref_name.find(':') != std::string::npos || ref_name.find('/') != std::string::npos)) {
    try {
      p.default_name = normalize_name(ref_name);
    } catch (const Error&) {
    }
  } else if (!ref_name.empty()) {
    p.default_name = ":" + ref_name;  // a tag only: the caller adds a repository
  }
  return p;
}

std::string sniff_layer_type(const std::string& blob) {
  unsigned char b[4] = {0, 0, 0, 0};
  Fd f(::open(blob.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd >= 0 && ::read(f.fd, b, 4) == 4) {
    if (b[0] == 0x1f && b[1] == 0x8b) return "application/vnd.oci.image.layer.v1.tar+gzip";
    if (b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) return "application/vnd.oci.image.layer.v1.tar+zstd";
  }
  return "application/vnd.oci.image.layer.v1.tar";
}

// docker-archive: manifest.json [{Config, RepoTags, Layers}]. The config member
// holds the same bytes as in the OCI image, so its digest (the image id) is the
// same; we write an OCI manifest for it so the store is uniform.
Parsed parse_docker(Store& store, Source& src, const std::string& path) {
  json mj = parse_json(src.read_small("manifest.json", "manifest.json"), path + ": manifest.json");
  if (!mj.is_array() || mj.empty()) throw Error(path + ": manifest.json lists no images; the archive is corrupt");
  if (mj.size() > 1) log::warn(path + " holds " + std::to_string(mj.size()) + " images; importing the first");
  const json& m = mj[0];
  std::string what = path + ": manifest.json";
  if (!m.is_object()) throw Error(what + " entry is not an object; the archive is corrupt");
  Parsed p;
  std::string cfg = field<std::string>(m, "Config", what);
  auto [chex, csize] = src.digest_of(cfg);
  if (csize > kMaxJson) throw Error(what + ": config " + cfg + " is larger than 4 MiB");
  src.put_blob(cfg, chex, static_cast<int64_t>(csize));
  p.config_hex = chex;
  p.config_bytes = src.read_small(cfg, "config");
  auto layers = field<std::vector<std::string>>(m, "Layers", what);
  if (layers.size() > kMaxLayers) throw Error(what + " has more than 500 layers");
  json lj = json::array();
  for (const auto& l : layers) {
    auto [lhex, lsize] = src.digest_of(l);
    src.put_blob(l, lhex, static_cast<int64_t>(lsize));
    Descriptor d{sniff_layer_type(store.root() + "/blobs/sha256/" + lhex), "sha256:" + lhex,
                 static_cast<int64_t>(lsize)};
    p.layers.push_back(d);
    lj.push_back({{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}});
  }
  json man = {{"schemaVersion", 2},
              {"mediaType", kOciManifest},
              {"config", {{"mediaType", kOciConfig}, {"digest", "sha256:" + chex}, {"size", csize}}},
              {"layers", lj}};
  std::string mb = man.dump();
  p.manifest_hex = sha256_hex(mb);
  std::string dst = store.root() + "/blobs/sha256/" + p.manifest_hex;
  if (!fs::exists(dst)) fs::write_file_atomic(dst, mb, 0444);
  if (auto it = m.find("RepoTags"); it != m.end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
    try {
      p.default_name = normalize_name((*it)[0].get<std::string>());
    } catch (const Error&) {
    }
    for (size_t i = 1; i < it->size(); ++i) try {
        if ((*it)[i].is_string()) p.more_names.push_back(normalize_name((*it)[i].get<std::string>()));
      } catch (const Error&) {
      }
  }
  return p;
}

// "tests/images/out/busybox.oci.tar" -> "busybox"; empty if no valid name results.
std::string name_from_path(const std::string& path) {
  std::string b = path;
  while (b.size() > 1 && b.back() == '/') b.pop_back();
  b = b.substr(b.rfind('/') == std::string::npos ? 0 : b.rfind('/') + 1);
  for (const char* suf : {".tar.gz", ".tar.zst", ".tgz", ".tar", ".oci", ".docker", "-oci", "-docker", ".oci"})
    if (b.size() > std::strlen(suf) && b.compare(b.size() - std::strlen(suf), std::string::npos, suf) == 0)
      b.resize(b.size() - std::strlen(suf));
  for (auto& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  try {
    return parse_reference(b).kind == Reference::Kind::Name && b.find(':') == std::string::npos ? b : "";
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

ImageRecord Store::import(const std::string& path, const ImportOptions& opts) {
  std::string want_name = opts.name.empty() ? "" : normalize_name(opts.name);
  struct stat st;
  if (::stat(path.c_str(), &st) < 0) throw_errno("import " + path);
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
    throw Error("import " + path + ": not a directory (OCI layout) or a file (oci-archive, docker-archive)");

  // Held shared for the whole import: gc/rmi must not delete what we add
  // before it is in the index.
  fs::FileLock gc_lock(root_ + "/gc.lock", fs::FileLock::Shared);
  std::string tmpl = root_ + "/tmp/import-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw_errno("create temp dir in " + root_ + "/tmp");
  std::string tmp = tmpl;
  auto report = [&](const ImportProgress& p) {
    if (opts.progress) opts.progress(p);
  };
  try {
    std::unique_ptr<Source> src;
    if (S_ISDIR(st.st_mode))
      src = std::make_unique<DirSource>(*this, path, tmp, opts);
    else
      src = std::make_unique<TarSource>(*this, path, tmp, opts);

    Parsed p;
    if (src->has("oci-layout") && src->has("index.json"))
      p = parse_oci(*src, path);
    else if (src->has("manifest.json"))
      p = parse_docker(*this, *src, path);
    else
      throw Error(path + " is neither an OCI image layout (oci-layout, index.json) nor a docker-archive "
                         "(manifest.json)");

    // The config: the runtime parts and the layers' diff ids.
    std::string cwhat = "image config sha256:" + p.config_hex;
    json cfg = parse_json(p.config_bytes, cwhat);
    if (!cfg.is_object()) throw Error(cwhat + " is not a JSON object; the image is corrupt");
    json rootfs = field<json>(cfg, "rootfs", cwhat);
    if (!rootfs.is_object() || rootfs.value("type", "") != "layers")
      throw Error(cwhat + ": rootfs.type is not \"layers\"; the image is corrupt");
    auto diff_ids = field<std::vector<std::string>>(rootfs, "diff_ids", cwhat + " rootfs");
    if (diff_ids.size() != p.layers.size())
      throw Error(cwhat + " lists " + std::to_string(diff_ids.size()) + " diff ids but the manifest has " +
                  std::to_string(p.layers.size()) + " layers; the image is corrupt");
    ImageRecord rec;
    rec.id = p.config_hex;
    rec.manifest_digest = "sha256:" + p.manifest_hex;
    rec.created = cfg.value("created", "");
    rec.architecture = cfg.value("architecture", "");
    rec.os = cfg.value("os", "");
    if (rec.os != "" && rec.os != "linux") throw Error("image " + rec.id.substr(0, 12) + " is for " + rec.os + ", not linux");
    if (auto c = cfg.find("config"); c != cfg.end() && c->is_object()) {
      try {
        auto strs = [&](const char* k) {
          auto it = c->find(k);
          return it == c->end() || it->is_null() ? std::vector<std::string>{} : it->get<std::vector<std::string>>();
        };
        rec.config.env = strs("Env");
        rec.config.entrypoint = strs("Entrypoint");
        rec.config.cmd = strs("Cmd");
        rec.config.working_dir = c->value("WorkingDir", "");
        rec.config.user = c->value("User", "");
        rec.config.stop_signal = c->value("StopSignal", "");
        if (auto l = c->find("Labels"); l != c->end() && l->is_object())
          rec.config.labels = l->get<std::map<std::string, std::string>>();
      } catch (const json::exception& e) {
        throw Error(cwhat + ": \"config\" has a field of the wrong type (" + std::string(e.what()) + ")");
      }
    }
    for (size_t i = 0; i < diff_ids.size(); ++i) {
      digest_hex(diff_ids[i], cwhat + " diff id");
      rec.diff_ids.push_back(diff_ids[i]);
      // Chain id (image-spec config.md): ChainID(L0) = DiffID(L0),
      // ChainID(L0|..|Ln) = sha256(ChainID(L0|..|Ln-1) + " " + DiffID(Ln)).
      rec.chain_ids.push_back(i == 0 ? diff_ids[0] : "sha256:" + sha256_hex(rec.chain_ids.back() + " " + diff_ids[i]));
      rec.layer_digests.push_back(p.layers[i].digest);
      rec.size += static_cast<uint64_t>(p.layers[i].size);
    }

    // Every layer blob into the store (verified) before anything is unpacked,
    // unless a pull is still bringing them (then each is waited for below).
    int n = static_cast<int>(p.layers.size());
    if (!opts.wait_for_blob)
      for (const auto& d : p.layers) {
        std::string hex = digest_hex(d.digest);
        // (docker-archive layers are stored already, under their own digest)
        if (!fs::exists(blob_path(d.digest))) src->put_blob("blobs/sha256/" + hex, hex, d.size);
      }
    std::vector<ImageRecord> known = [&] {
      fs::FileLock l(root_ + "/store.lock", fs::FileLock::Shared);
      return read_index(root_);
    }();
    // Unpack the missing layers into temp dirs; they move into layers/ only
    // when all of them are complete and verified.
    std::vector<std::pair<std::string, std::string>> staged;  // temp dir, final dir
    std::vector<std::string> dirs;                           // where layer k is now, bottom first
    for (int i = 0; i < n; ++i) {
      const Descriptor& d = p.layers[i];
      std::string final_dir = root_ + "/layers/" + digest_hex(rec.chain_ids[i]);
      uint64_t unpacked = 0;
      if (fs::exists(final_dir)) {
        dirs.push_back(final_dir);
        for (const auto& k : known)
          for (size_t j = 0; j < k.chain_ids.size() && j < k.layer_unpacked_sizes.size(); ++j)
            if (k.chain_ids[j] == rec.chain_ids[i]) unpacked = k.layer_unpacked_sizes[j];
      } else {
        std::string dir = tmp + "/layer-" + std::to_string(i);
        if (::mkdir(dir.c_str(), 0755) < 0) throw_errno("create " + dir);
        if (::chmod(dir.c_str(), 0755) < 0) throw_errno("chmod " + dir);
        uint64_t total = static_cast<uint64_t>(d.size);
        if (opts.wait_for_blob) opts.wait_for_blob(d.digest);
        report({"unpacking", i + 1, n, 0, total});
        std::vector<std::string> lowers(dirs.rbegin(), dirs.rend());
        UnpackResult r = unpack_layer(
            blob_path(d.digest), dir, [&](uint64_t b) { report({"unpacking", i + 1, n, b, total}); }, lowers);
        if ("sha256:" + r.diff_id_hex != rec.diff_ids[i])
          throw Error("layer " + std::to_string(i + 1) + " (" + d.digest + ") unpacks to diff id sha256:" +
                      r.diff_id_hex + " but the config says " + rec.diff_ids[i] +
                      "; the image is corrupt or was tampered with");
        unpacked = r.bytes;
        staged.emplace_back(dir, final_dir);
        dirs.push_back(dir);
      }
      rec.layer_unpacked_sizes.push_back(unpacked);
      rec.unpacked_size += unpacked;
    }
    // A pull still downloading: every layer blob is in the store before the
    // image is (also those whose layer was unpacked already).
    if (opts.wait_for_blob)
      for (const auto& d : p.layers) opts.wait_for_blob(d.digest);
    if (!staged.empty()) {
      Fd dfd(::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (dfd.fd >= 0) ::syncfs(dfd.fd);  // layers are complete on disk before they are visible
    }
    for (const auto& [dir, final_dir] : staged)
      if (::renameat2(AT_FDCWD, dir.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_NOREPLACE) < 0 &&
          errno != EEXIST && errno != ENOTEMPTY)
        throw_errno("move layer into place at " + final_dir);

    std::string name = want_name;
    // The archive's other names of the image come along when it names it.
    std::vector<std::string> names;
    if (name.empty()) names = p.more_names;
    if (name.empty()) {
      if (!p.default_name.empty() && p.default_name[0] != ':') {
        name = p.default_name;
      } else {
        std::string repo = name_from_path(path);
        if (!repo.empty()) name = repo + (p.default_name.empty() ? ":latest" : p.default_name);
      }
    }
    rec.imported = now_rfc3339();
    {
      fs::FileLock l(root_ + "/store.lock", fs::FileLock::Exclusive);
      std::vector<ImageRecord> imgs = read_index(root_);
      if (!name.empty()) names.insert(names.begin(), name);
      for (const auto& n : names)
        for (auto& r : imgs) r.names.erase(std::remove(r.names.begin(), r.names.end(), n), r.names.end());
      auto it = std::find_if(imgs.begin(), imgs.end(), [&](const ImageRecord& r) { return r.id == rec.id; });
      rec.build_cache = opts.build_cache;
      if (it != imgs.end()) {
        rec.names = it->removed ? std::vector<std::string>{} : it->names;
        rec.imported = it->removed ? rec.imported : it->imported;
        if (!it->removed) rec.build_cache = it->build_cache && opts.build_cache;
        *it = rec;
        for (const auto& n : names) it->names.push_back(n);
        rec = *it;
      } else {
        for (const auto& n : names) rec.names.push_back(n);
        imgs.push_back(rec);
      }
      write_index(root_, imgs);
    }
    remove_tree(tmp);
    return rec;
  } catch (...) {
    try {
      remove_tree(tmp);
    } catch (const Error& e) {
      log::warn(std::string("could not remove temp dir (sbx gc will): ") + e.what());
    }
    throw;
  }
}

}  // namespace sbx::oci
