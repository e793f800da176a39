// Helpers for the oci/ unit tests: craft tar layers (libarchive's write API)
// and whole OCI layouts / docker-archives in temp dirs.
#pragma once
// The tests build entries with designated initializers and rely on defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fs.h"
#include "oci/digest.h"
#include "oci/tree.h"

namespace sbx::test {

struct TarEntry {
  std::string path;
  unsigned type = AE_IFREG;  // AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR, AE_IFBLK, AE_IFIFO
  unsigned perm = 0644;
  std::string data;
  std::string symlink;   // AE_IFLNK target
  std::string hardlink;  // makes it a hard link to this path
  int uid = 0, gid = 0;
  unsigned rmajor = 0, rminor = 0;
  long mtime = 1700000000;
  std::map<std::string, std::string> xattrs;
};

enum class Compress { None, Gzip, Zstd };

inline la_ssize_t tar_write_cb(archive*, void* ud, const void* buf, size_t n) {
  static_cast<std::string*>(ud)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

/// A tar (pax) of `entries`, compressed as asked.
inline std::string make_tar(const std::vector<TarEntry>& entries, Compress c = Compress::None) {
  std::string out;
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (c == Compress::Gzip) archive_write_add_filter_gzip(a);
  if (c == Compress::Zstd) archive_write_add_filter_zstd(a);
  archive_write_set_bytes_in_last_block(a, 1);
  archive_write_open(a, &out, nullptr, tar_write_cb, nullptr);
  for (const auto& t : entries) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, t.path.c_str());
    archive_entry_set_filetype(e, t.type);
    archive_entry_set_perm(e, t.perm);
    archive_entry_set_uid(e, t.uid);
    archive_entry_set_gid(e, t.gid);
    archive_entry_set_mtime(e, t.mtime, 0);
    if (!t.hardlink.empty()) archive_entry_set_hardlink(e, t.hardlink.c_str());
    if (t.type == AE_IFLNK) archive_entry_set_symlink(e, t.symlink.c_str());
    if (t.type == AE_IFCHR || t.type == AE_IFBLK) {
      archive_entry_set_rdevmajor(e, t.rmajor);
      archive_entry_set_rdevminor(e, t.rminor);
    }
    for (const auto& [k, v] : t.xattrs) archive_entry_xattr_add_entry(e, k.c_str(), v.data(), v.size());
    bool has_data = t.type == AE_IFREG && t.hardlink.empty();
    archive_entry_set_size(e, has_data ? static_cast<la_int64_t>(t.data.size()) : 0);
    archive_write_header(a, e);
    if (has_data && !t.data.empty()) archive_write_data(a, t.data.data(), t.data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

/// A temp dir removed (with everything in it) on destruction.
struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/sbx-unit.XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() {
    try {
      oci::remove_tree(path);
    } catch (...) {
    }
  }
  std::string operator/(const std::string& s) const { return path + "/" + s; }
};

inline std::string put_blob(const std::string& layout, const std::string& bytes) {
  std::string hex = oci::sha256_hex(bytes);
  fs::write_file_atomic(layout + "/blobs/sha256/" + hex, bytes);
  return hex;
}

struct BuiltImage {
  std::string config_hex, manifest_hex;
  std::vector<std::string> layer_hex;  // compressed blob digests
  std::vector<std::string> diff_hex;   // uncompressed
};

/// Writes an OCI layout at `dir` with the given layers (uncompressed tars),
/// compressed with `c`. `config_override` replaces the config bytes.
inline BuiltImage make_oci_layout(const std::string& dir, const std::vector<std::string>& tars,
                                  Compress c = Compress::Gzip, const std::string& ref_name = "latest",
                                  const std::string* config_override = nullptr) {
  using json = nlohmann::json;
  fs::mkdir_p(dir + "/blobs/sha256");
  BuiltImage b;
  json layers = json::array(), diffs = json::array();
  for (const auto& t : tars) {
    std::string blob = t;
    if (c != Compress::None) {
      // Re-compress the exact bytes with libarchive's raw writer.
      std::string out;
      archive* a = archive_write_new();
      archive_write_set_format_raw(a);
      if (c == Compress::Gzip) archive_write_add_filter_gzip(a);
      if (c == Compress::Zstd) archive_write_add_filter_zstd(a);
      archive_write_set_bytes_in_last_block(a, 1);
      archive_write_open(a, &out, nullptr, tar_write_cb, nullptr);
      archive_entry* e = archive_entry_new();
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_pathname(e, "x");
      archive_entry_set_size(e, static_cast<la_int64_t>(t.size()));
      archive_write_header(a, e);
      archive_write_data(a, t.data(), t.size());
      archive_entry_free(e);
      archive_write_close(a);
      archive_write_free(a);
      blob = out;
    }
    std::string hex = put_blob(dir, blob);
    b.layer_hex.push_back(hex);
    b.diff_hex.push_back(oci::sha256_hex(t));
    const char* mt = c == Compress::None   ? "application/vnd.oci.image.layer.v1.tar"
                     : c == Compress::Gzip ? "application/vnd.oci.image.layer.v1.tar+gzip"
                                           : "application/vnd.oci.image.layer.v1.tar+zstd";
    layers.push_back({{"mediaType", mt}, {"digest", "sha256:" + hex}, {"size", blob.size()}});
    diffs.push_back("sha256:" + oci::sha256_hex(t));
  }
  json cfg = {{"architecture", "amd64"},
              {"os", "linux"},
              {"created", "2024-01-02T03:04:05Z"},
              {"config", {{"Env", {"PATH=/bin"}}, {"Cmd", {"/bin/sh"}}, {"WorkingDir", "/w"}, {"User", "1000"}}},
              {"rootfs", {{"type", "layers"}, {"diff_ids", diffs}}}};
  std::string cfg_bytes = config_override ? *config_override : cfg.dump();
  b.config_hex = put_blob(dir, cfg_bytes);
  json man = {{"schemaVersion", 2},
              {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
              {"config",
               {{"mediaType", "application/vnd.oci.image.config.v1+json"},
                {"digest", "sha256:" + b.config_hex},
                {"size", cfg_bytes.size()}}},
              {"layers", layers}};
  std::string mb = man.dump();
  b.manifest_hex = put_blob(dir, mb);
  json index = {{"schemaVersion", 2},
                {"manifests",
                 {{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                   {"digest", "sha256:" + b.manifest_hex},
                   {"size", mb.size()},
                   {"annotations", {{"org.opencontainers.image.ref.name", ref_name}}}}}}};
  fs::write_file_atomic(dir + "/index.json", index.dump());
  fs::write_file_atomic(dir + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  return b;
}

/// A docker-archive tar (docker save format) of the OCI layout `b` made by
/// make_oci_layout with Compress::None (layers stored uncompressed).
inline std::string make_docker_archive(const std::string& layout, const BuiltImage& b, const std::string& tag) {
  using json = nlohmann::json;
  std::vector<TarEntry> es;
  json layers = json::array();
  for (const auto& h : b.layer_hex) {
    es.push_back({.path = h + ".tar", .data = fs::read_file(layout + "/blobs/sha256/" + h)});
    layers.push_back(h + ".tar");
  }
  es.push_back({.path = b.config_hex + ".json", .data = fs::read_file(layout + "/blobs/sha256/" + b.config_hex)});
  json m = json::array({{{"Config", b.config_hex + ".json"}, {"RepoTags", {tag}}, {"Layers", layers}}});
  es.push_back({.path = "manifest.json", .data = m.dump()});
  return make_tar(es);
}

}  // namespace sbx::test
