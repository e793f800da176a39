#include "oci/commit.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/digest.h"
#include "oci/tree.h"

namespace sbx::oci {

namespace {

using json = nlohmann::json;

constexpr const char* kOciManifest = "application/vnd.oci.image.manifest.v1+json";
constexpr const char* kOciConfig = "application/vnd.oci.image.config.v1+json";
constexpr const char* kOciIndex = "application/vnd.oci.image.index.v1+json";
constexpr const char* kOciLayerTar = "application/vnd.oci.image.layer.v1.tar";

std::string now_rfc3339() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000;
  struct tm tm;
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ns));
  return buf;
}

/// A file of the temp layout: no fsync (import verifies and copies what it
/// keeps; the layout is removed either way).
void write_temp(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("write " + path);
  try {
    fs::write_all(fd, data, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

json read_blob_json(const Store& store, const std::string& digest, const std::string& what) {
  std::string p = store.blob_path(digest);
  std::string bytes = fs::read_file(p);
  if (sha256_hex(bytes) != digest_hex(digest, what))
    throw Error(what + " " + p + " does not match its digest; the store is corrupt (re-import the image)");
  try {
    return json::parse(bytes);
  } catch (const json::exception& e) {
    throw Error(what + " " + p + " is not valid JSON: " + e.what());
  }
}

}  // namespace

ImageRecord commit_layer(Store& store, const std::string& parent_ref, const std::string& layer_tar,
                         const std::string& layer_hex, const CommitOptions& opts) {
  if (!is_sha256_hex(layer_hex)) throw Error("commit: '" + layer_hex + "' is not a sha256 hex digest");
  ImageRecord parent = store.resolve(parent_ref);
  json config = read_blob_json(store, "sha256:" + parent.id, "config of image " + parent.id.substr(0, 12));
  if (!config.is_object() || !config.contains("rootfs") || !config["rootfs"].is_object())
    throw Error("image " + parent.id.substr(0, 12) + " has a malformed manifest or config; re-import it");

  const std::string created = now_rfc3339();
  const std::string digest = "sha256:" + layer_hex;
  config["created"] = created;
  config["rootfs"]["diff_ids"].push_back(digest);  // uncompressed: diff id == blob digest
  json hist = {{"created", created}};
  if (!opts.created_by.empty()) hist["created_by"] = opts.created_by;
  if (!opts.comment.empty()) hist["comment"] = opts.comment;
  if (!config.contains("history") || !config["history"].is_array()) config["history"] = json::array();
  config["history"].push_back(hist);
  if (!opts.labels.empty()) {
    if (!config.contains("config") || !config["config"].is_object()) config["config"] = json::object();
    json& cfg = config["config"];
    if (!cfg.contains("Labels") || !cfg["Labels"].is_object()) cfg["Labels"] = json::object();
    for (const auto& [k, v] : opts.labels) cfg["Labels"][k] = v;
  }
  ImageCommit c;
  c.parent = parent.id;
  c.layer_tar = layer_tar;
  c.layer_hex = layer_hex;
  c.config_json = config.dump();
  c.name = opts.name;
  return commit_image(store, c);
}

std::string image_config_json(const Store& store, const ImageRecord& image) {
  std::string p = store.blob_path("sha256:" + image.id);
  std::string bytes = fs::read_file(p);
  if (sha256_hex(bytes) != image.id)
    throw Error("config of image " + image.id.substr(0, 12) + " (" + p +
                ") does not match its digest; the store is corrupt (re-import the image)");
  return bytes;
}

ImageRecord commit_image(Store& store, const ImageCommit& c) {
  const bool with_layer = !c.layer_tar.empty();
  if (with_layer && !is_sha256_hex(c.layer_hex))
    throw Error("commit: '" + c.layer_hex + "' is not a sha256 hex digest");
  const std::string root = store.root();
  // Held shared until the image is in the index: gc must not take the new
  // blob (unreferenced until then) or our temp dir.
  fs::FileLock gc_lock(root + "/gc.lock", fs::FileLock::Shared);
  json manifest = {{"schemaVersion", 2}, {"layers", json::array()}};
  if (!c.parent.empty()) {
    ImageRecord parent = store.resolve(c.parent);
    manifest = read_blob_json(store, parent.manifest_digest, "manifest of image " + parent.id.substr(0, 12));
    if (!manifest.is_object() || !manifest.contains("layers") || !manifest["layers"].is_array())
      throw Error("image " + parent.id.substr(0, 12) + " has a malformed manifest; re-import it");
  }
  int64_t layer_size = 0;
  const std::string digest = "sha256:" + c.layer_hex;
  if (with_layer) {
    struct stat st;
    if (::stat(c.layer_tar.c_str(), &st) < 0) throw_errno("commit: layer " + c.layer_tar);
    layer_size = st.st_size;
  }
  {
    json config;
    try {
      config = json::parse(c.config_json);
    } catch (const json::exception& e) {
      throw Error(std::string("commit: the new image config is not valid JSON: ") + e.what());
    }
    size_t want = manifest["layers"].size() + (with_layer ? 1 : 0);
    auto ids = config.contains("rootfs") && config["rootfs"].is_object() ? config["rootfs"].value("diff_ids", json::array())
                                                                        : json::array();
    if (!ids.is_array() || ids.size() != want)
      throw Error("commit: the new image config lists " + std::to_string(ids.is_array() ? ids.size() : 0) +
                  " diff ids for " + std::to_string(want) + " layers");
  }
  const std::string& config_bytes = c.config_json;
  std::string config_hex = sha256_hex(config_bytes);

  manifest["mediaType"] = kOciManifest;
  manifest["config"] = {{"mediaType", kOciConfig}, {"digest", "sha256:" + config_hex},
                        {"size", static_cast<int64_t>(config_bytes.size())}};
  if (with_layer) manifest["layers"].push_back({{"mediaType", kOciLayerTar}, {"digest", digest}, {"size", layer_size}});
  manifest.erase("annotations");
  std::string manifest_bytes = manifest.dump();
  std::string manifest_hex = sha256_hex(manifest_bytes);

  // The new layer goes straight into the store's blobs (it is already
  // verified: we hashed it while writing); import then skips copying it.
  fs::mkdir_p(root + "/blobs/sha256");
  if (with_layer) {
    std::string blob = store.blob_path(digest);
    if (::renameat2(AT_FDCWD, c.layer_tar.c_str(), AT_FDCWD, blob.c_str(), RENAME_NOREPLACE) < 0) {
      if (errno != EEXIST) throw_errno("move layer " + c.layer_tar + " into the store at " + blob);
      ::unlink(c.layer_tar.c_str());  // the same layer is stored already
    } else {
      ::chmod(blob.c_str(), 0444);
    }
  }

  // A minimal OCI layout holding what is new; the store's import adds it
  // (and unpacks the new layer) like any other image.
  fs::mkdir_p(root + "/tmp");
  // The leading '.' keeps import from deriving an image name from the dir
  // name when opts.name is empty (".commit-…" is not a valid repository).
  std::string tmpl = root + "/tmp/.commit-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw_errno("create temp dir in " + root + "/tmp");
  const std::string layout = tmpl;
  try {
    fs::mkdir_p(layout + "/blobs/sha256");
    write_temp(layout + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
    write_temp(layout + "/blobs/sha256/" + config_hex, config_bytes);
    write_temp(layout + "/blobs/sha256/" + manifest_hex, manifest_bytes);
    json index = {{"schemaVersion", 2},
                  {"mediaType", kOciIndex},
                  {"manifests", json::array({{{"mediaType", kOciManifest},
                                              {"digest", "sha256:" + manifest_hex},
                                              {"size", static_cast<int64_t>(manifest_bytes.size())}}})}};
    write_temp(layout + "/index.json", index.dump());
    ImportOptions io;
    io.name = c.name;
    io.build_cache = c.build_cache;
    ImageRecord rec = store.import(layout, io);
    remove_tree(layout);
    return rec;
  } catch (...) {
    try {
      remove_tree(layout);
    } catch (const Error& e) {
      log::warn(std::string("could not remove temp dir (sbx gc will): ") + e.what());
    }
    throw;
  }
}

}  // namespace sbx::oci
