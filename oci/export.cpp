#include "oci/export.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "oci/digest.h"
#include "oci/reference.h"

namespace sbx::oci {

namespace {

using json = nlohmann::json;

/// A tar being written to a file, entries with fixed metadata (root-owned,
/// 0644, mtime 0) so the same image exports to the same bytes.
class TarOut {
 public:
  explicit TarOut(const std::string& path) : path_(path), a_(archive_write_new(), archive_write_free) {
    archive_write_set_format_pax_restricted(a_.get());
    archive_write_set_bytes_in_last_block(a_.get(), 1);
    if (archive_write_open_filename(a_.get(), path.c_str()) != ARCHIVE_OK)
      throw Error("create " + path + ": " + archive_error_string(a_.get()));
  }
  void header(const std::string& name, uint64_t size) {
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(e.get(), name.c_str());
    bool dir = !name.empty() && name.back() == '/';
    archive_entry_set_filetype(e.get(), dir ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(e.get(), dir ? 0755 : 0644);
    archive_entry_set_size(e.get(), dir ? 0 : static_cast<la_int64_t>(size));
    archive_entry_set_mtime(e.get(), 0, 0);
    if (archive_write_header(a_.get(), e.get()) != ARCHIVE_OK)
      throw Error("write " + name + " to " + path_ + ": " + archive_error_string(a_.get()));
  }
  void dir(const std::string& name) { header(name, 0); }
  void bytes(const std::string& name, const std::string& data) {
    header(name, data.size());
    data_(data.data(), data.size(), name);
  }
  /// Copies blob `digest` from the store, checking its sha256 on the way.
  void blob(const std::string& name, const Store& store, const std::string& digest) {
    std::string src = store.blob_path(digest);
    int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_errno("open blob " + src + " (the store is incomplete; re-import the image)");
    struct stat st;
    if (::fstat(fd, &st) < 0) {
      int e = errno;
      ::close(fd);
      throw_errno("stat " + src, e);
    }
    header(name, static_cast<uint64_t>(st.st_size));
    Sha256 h;
    std::vector<char> buf(1 << 20);
    uint64_t left = static_cast<uint64_t>(st.st_size);
    while (left > 0) {
      ssize_t n = ::read(fd, buf.data(), std::min<uint64_t>(left, buf.size()));
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        int e = n < 0 ? errno : EIO;
        ::close(fd);
        throw_errno("read blob " + src, e);
      }
      h.update(buf.data(), static_cast<size_t>(n));
      data_(buf.data(), static_cast<size_t>(n), name);
      left -= static_cast<uint64_t>(n);
    }
    ::close(fd);
    if ("sha256:" + h.hex() != digest)
      throw Error("blob " + src + " does not match its digest " + digest + "; the store is corrupt (re-import the image)");
  }
  void close() {
    if (archive_write_close(a_.get()) != ARCHIVE_OK) throw Error("finish " + path_ + ": " + archive_error_string(a_.get()));
  }

 private:
  void data_(const void* p, size_t n, const std::string& name) {
    if (archive_write_data(a_.get(), p, n) < 0)
      throw Error("write " + name + " to " + path_ + ": " + archive_error_string(a_.get()));
  }
  std::string path_;
  std::unique_ptr<struct archive, int (*)(struct archive*)> a_;
};

std::string pick_name(const ImageRecord& img, const std::string& ref, const std::string& name) {
  if (!name.empty()) return normalize_name(name);
  try {
    Reference r = parse_reference(ref);
    if (r.kind == Reference::Kind::Name) {
      std::string n = r.str();
      for (const auto& have : img.names)
        if (have == n) return n;
    }
  } catch (const Error&) {
  }
  return img.names.empty() ? "" : img.names.front();
}

// docker save layout: one file per blob (each written once: `done`), and an
// entry of manifest.json (appended to `m`) naming them.
void docker_entry(TarOut& t, const Store& store, const ImageRecord& img, const std::string& name,
                  std::set<std::string>& done, json& m) {
  // An image named twice (`docker save a b` of two tags of one image): one
  // entry with both RepoTags, as docker writes it.
  for (auto& e : m)
    if (e["Config"] == img.id + ".json") {
      if (!name.empty()) e["RepoTags"].push_back(name);
      return;
    }
  json layers = json::array();
  if (done.insert(img.id + ".json").second) t.blob(img.id + ".json", store, "sha256:" + img.id);
  for (const auto& d : img.layer_digests) {
    std::string f = digest_hex(d) + ".tar";
    if (done.insert(f).second) t.blob(f, store, d);
    layers.push_back(f);
  }
  m.push_back({{"Config", img.id + ".json"},
               {"RepoTags", name.empty() ? json::array() : json::array({name})},
               {"Layers", layers}});
}

}  // namespace

ArchiveFormat parse_archive_format(const std::string& s) {
  if (s == "oci-archive" || s == "oci") return ArchiveFormat::OciArchive;
  if (s == "docker-archive" || s == "docker") return ArchiveFormat::DockerArchive;
  throw Error("unknown archive format '" + s + "'; use oci-archive or docker-archive");
}

ExportResult export_image(const Store& store, const std::string& ref, const std::string& out_path,
                          ArchiveFormat format, const std::string& name) {
  ImageRecord img = store.resolve(ref);
  ExportResult res{img.id, img.manifest_digest, pick_name(img, ref, name), 0};
  // Layer blobs as listed in the stored manifest (with their media types).
  json manifest;
  std::string mbytes = fs::read_file(store.blob_path(img.manifest_digest));
  try {
    manifest = json::parse(mbytes);
  } catch (const json::exception& e) {
    throw Error("manifest of image " + img.id.substr(0, 12) + " is not valid JSON: " + e.what());
  }
  if (img.layer_digests.size() != img.diff_ids.size())
    throw Error("image " + img.id.substr(0, 12) + " has an incomplete store record; re-import it");

  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string tmp = out_path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rng() % 1000000);
  try {
    TarOut t(tmp);
    if (format == ArchiveFormat::OciArchive) {
      t.bytes("oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
      json desc = {{"mediaType", manifest.value("mediaType", "application/vnd.oci.image.manifest.v1+json")},
                   {"digest", img.manifest_digest},
                   {"size", mbytes.size()}};
      if (!res.name.empty()) desc["annotations"] = {{"org.opencontainers.image.ref.name", res.name}};
      json index = {{"schemaVersion", 2}, {"manifests", json::array({desc})}};
      t.bytes("index.json", index.dump());
      t.dir("blobs/");
      t.dir("blobs/sha256/");
      std::set<std::string> done;
      auto put = [&](const std::string& d) {
        if (done.insert(d).second) t.blob("blobs/sha256/" + digest_hex(d), store, d);
      };
      put(img.manifest_digest);
      put("sha256:" + img.id);
      for (const auto& d : img.layer_digests) put(d);
    } else {
      std::set<std::string> done;
      json m = json::array();
      docker_entry(t, store, img, res.name, done, m);
      t.bytes("manifest.json", m.dump());
    }
    t.close();
    struct stat st;
    if (::stat(tmp.c_str(), &st) == 0) res.bytes = static_cast<uint64_t>(st.st_size);
    if (::rename(tmp.c_str(), out_path.c_str()) < 0) throw_errno("rename " + tmp + " to " + out_path);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  return res;
}

uint64_t export_docker_archive(const Store& store, const std::vector<std::pair<std::string, std::string>>& images,
                               const std::string& out_path) {
  if (images.empty()) throw Error("export: no image to write to " + out_path);
  std::vector<std::pair<ImageRecord, std::string>> imgs;
  for (const auto& [ref, name] : images) {
    ImageRecord img = store.resolve(ref);
    if (img.layer_digests.size() != img.diff_ids.size())
      throw Error("image " + img.id.substr(0, 12) + " has an incomplete store record; re-import it");
    imgs.emplace_back(img, pick_name(img, ref, name));
  }
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string tmp = out_path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rng() % 1000000);
  uint64_t bytes = 0;
  try {
    TarOut t(tmp);
    std::set<std::string> done;
    json m = json::array();
    for (const auto& [img, name] : imgs) docker_entry(t, store, img, name, done, m);
    t.bytes("manifest.json", m.dump());
    t.close();
    struct stat st;
    if (::stat(tmp.c_str(), &st) == 0) bytes = static_cast<uint64_t>(st.st_size);
    if (::rename(tmp.c_str(), out_path.c_str()) < 0) throw_errno("rename " + tmp + " to " + out_path);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  return bytes;
}

}  // namespace sbx::oci
