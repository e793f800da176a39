// The image store: index lookups (resolve, list), tags, removal and gc.
// Import lives in oci/import.cpp.
#include "oci/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/digest.h"
#include "oci/index.h"
#include "oci/reference.h"
#include "oci/tree.h"

namespace sbx::oci {
namespace {

constexpr int kExitImageNotFound = 1;  // podman rmi: "one of the images does not exist"
constexpr int kExitImageInUse = 2;     // podman rmi: "image is in use by a container"

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (!d) {
    if (errno == ENOENT) return out;
    throw_errno("read directory " + path);
  }
  while (dirent* de = ::readdir(d)) {
    std::string n = de->d_name;
    if (n != "." && n != "..") out.push_back(std::move(n));
  }
  ::closedir(d);
  return out;
}

std::string hex_of(const std::string& digest) {
  return digest.rfind("sha256:", 0) == 0 ? digest.substr(7) : digest;
}

[[noreturn]] void not_found(const std::string& ref, int code = kExitSbxFailed) {
  throw Error(ErrorKind::ImageNotFound,
              "image '" + ref + "' not found; see 'sbx images' or import it with 'sbx import'", ENOENT, code);
}

// Finds the index of the record `ref` names among visible (not removed) records.
size_t find_record(const std::vector<ImageRecord>& imgs, const std::string& ref, int not_found_code) {
  Reference r = parse_reference(ref);
  auto visible = [&](size_t i) { return !imgs[i].removed; };
  if (r.kind == Reference::Kind::Name) {
    std::string want = r.str();
    for (size_t i = 0; i < imgs.size(); ++i)
      if (visible(i) && std::find(imgs[i].names.begin(), imgs[i].names.end(), want) != imgs[i].names.end()) return i;
    if (!r.maybe_id) not_found(ref, not_found_code);
    r.kind = Reference::Kind::Id;
    r.id = ref;
  }
  if (r.kind == Reference::Kind::NameDigest) {
    for (size_t i = 0; i < imgs.size(); ++i) {
      if (!visible(i) || (imgs[i].manifest_digest != r.digest && "sha256:" + imgs[i].id != r.digest)) continue;
      for (const auto& n : imgs[i].names)
        if (n.substr(0, n.rfind(':')) == r.repository) return i;
    }
    not_found(ref, not_found_code);
  }
  size_t found = SIZE_MAX;
  for (size_t i = 0; i < imgs.size(); ++i) {
    if (!visible(i) || imgs[i].id.compare(0, r.id.size(), r.id) != 0) continue;
    if (found != SIZE_MAX && imgs[found].id != imgs[i].id)
      throw Error(ErrorKind::InvalidArgument, "image id prefix '" + r.id + "' is ambiguous (it matches " + imgs[found].id.substr(0, 12) + " and " +
                      imgs[i].id.substr(0, 12) + "); give more digits",
                  0, not_found_code);
    found = i;
  }
  if (found == SIZE_MAX) not_found(ref, not_found_code);
  return found;
}

}  // namespace

Store::Store(std::string root) : root_(std::move(root)) {
  if (root_.empty()) throw Error("image store: --root is empty");
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_[0] != '/') {
    char cwd[4096];
    if (!::getcwd(cwd, sizeof cwd)) throw_errno("getcwd");
    root_ = std::string(cwd) + "/" + root_;
  }
  struct stat st;
  // Fast path (sandbox start): an existing store needs no mkdir.
  if (::stat((root_ + "/tmp").c_str(), &st) == 0) return;
  try {
    fs::mkdir_p(root_ + "/blobs/sha256", 0755);
    fs::mkdir_p(root_ + "/layers", 0755);
    fs::mkdir_p(root_ + "/tmp", 0700);
  } catch (const Error& e) {
    throw Error(std::string("image store ") + root_ + ": " + e.what() +
                    (e.err() == EACCES || e.err() == EPERM ? "; run as root or pick another --root" : ""),
                e.err());
  }
}

std::string Store::blob_path(const std::string& digest) const {
  return root_ + "/blobs/sha256/" + digest_hex(digest);
}

ImageRecord Store::resolve(const std::string& ref) const {
  // Only the records that can match are parsed (see read_index_matching);
  // find_record then matches exactly among them.
  Reference r = parse_reference(ref);
  std::vector<std::string> needles;
  switch (r.kind) {
    case Reference::Kind::Name:
      needles.push_back("\"" + r.str() + "\"");
      if (r.maybe_id) needles.push_back("\"id\":\"" + ref);
      break;
    case Reference::Kind::NameDigest:
      needles.push_back("\"" + r.digest + "\"");
      needles.push_back("\"id\":\"" + r.digest.substr(7) + "\"");
      break;
    case Reference::Kind::Id:
      needles.push_back("\"id\":\"" + r.id);
      break;
  }
  fs::FileLock lock(root_ + "/store.lock", fs::FileLock::Shared);
  std::vector<ImageRecord> imgs = read_index_matching(root_, needles);
  return imgs[find_record(imgs, ref, kExitSbxFailed)];
}

std::vector<std::string> Store::layer_dirs(const ImageRecord& image) const {
  std::vector<std::string> out;
  out.reserve(image.chain_ids.size());
  for (const auto& c : image.chain_ids) out.push_back(root_ + "/layers/" + hex_of(c));
  return out;
}

std::vector<ImageRecord> Store::list(bool with_build_cache) const {
  fs::FileLock lock(root_ + "/store.lock", fs::FileLock::Shared);
  std::vector<ImageRecord> imgs = read_index(root_);
  imgs.erase(std::remove_if(imgs.begin(), imgs.end(),
                            [&](const ImageRecord& r) {
                              return r.removed || (r.build_cache && r.names.empty() && !with_build_cache);
                            }),
             imgs.end());
  std::stable_sort(imgs.begin(), imgs.end(), [](const ImageRecord& a, const ImageRecord& b) {
    return a.created != b.created ? a.created > b.created : a.imported > b.imported;
  });
  return imgs;
}

void Store::tag(const std::string& ref, const std::string& name) {
  std::string n = normalize_name(name);
  fs::FileLock lock(root_ + "/store.lock", fs::FileLock::Exclusive);
  std::vector<ImageRecord> imgs = read_index(root_);
  size_t i = find_record(imgs, ref, kExitSbxFailed);
  for (auto& r : imgs) r.names.erase(std::remove(r.names.begin(), r.names.end(), n), r.names.end());
  imgs[i].names.push_back(n);
  write_index(root_, imgs);
}

void Store::set_build_cache(const std::string& id, bool cache) {
  fs::FileLock lock(root_ + "/store.lock", fs::FileLock::Exclusive);
  std::vector<ImageRecord> imgs = read_index(root_);
  for (auto& r : imgs)
    if (r.id == id && !r.removed) {
      if (r.build_cache == cache) return;
      r.build_cache = cache;
      write_index(root_, imgs);
      return;
    }
  not_found(id);
}

std::vector<std::string> Store::sandboxes_using(const std::string& run_root, const std::string& image_id) {
  std::vector<std::string> out;
  std::string want = hex_of(image_id);
  for (const auto& id : list_dir(run_root)) {
    std::string text;
    try {
      text = fs::read_file(run_root + "/" + id + "/state.json");
    } catch (const Error&) {
      continue;  // not a sandbox dir (or being deleted)
    }
    try {
      auto j = nlohmann::json::parse(text);
      auto it = j.find("image_id");
      if (it != j.end() && it->is_string() && hex_of(it->get<std::string>()) == want) out.push_back(id);
    } catch (const nlohmann::json::exception&) {
      log::debug("ignoring unreadable " + run_root + "/" + id + "/state.json");
    }
  }
  return out;
}

RemoveResult Store::remove(const std::string& ref, const std::string& run_root, bool force) {
  RemoveResult res;
  {
    fs::FileLock lock(root_ + "/store.lock", fs::FileLock::Exclusive);
    std::vector<ImageRecord> imgs = read_index(root_);
    size_t i = find_record(imgs, ref, kExitImageNotFound);
    ImageRecord& img = imgs[i];
    Reference r = parse_reference(ref);
    std::string name = r.kind == Reference::Kind::Name ? r.str() : "";
    bool by_name = !name.empty() && std::find(img.names.begin(), img.names.end(), name) != img.names.end();
    if (by_name && img.names.size() > 1) {  // podman: untag only
      img.names.erase(std::remove(img.names.begin(), img.names.end(), name), img.names.end());
      res.untagged.push_back(name);
      write_index(root_, imgs);
      return res;
    }
    std::vector<std::string> users = sandboxes_using(run_root, img.id);
    if (!users.empty() && !force) {
      std::string list;
      for (const auto& u : users) list += (list.empty() ? "" : ", ") + u;
      throw Error(ErrorKind::Conflict, "image " + img.id.substr(0, 12) + " is in use by sandbox(es) " + list +
                      "; remove them first or use 'sbx rmi --force'",
                  EBUSY, kExitImageInUse);
    }
    res.untagged = img.names;
    res.deleted = img.id;
    if (!users.empty()) {
      img.removed = true;  // keep its layers for the running sandboxes; gc drops it later
      img.names.clear();
      res.content_kept = true;
    } else {
      imgs.erase(imgs.begin() + static_cast<long>(i));
    }
    write_index(root_, imgs);
  }
  if (res.content_kept) return res;
  // Delete content nobody references now, unless an import is running (it may
  // have placed content it has not indexed yet): then `sbx gc` does it later.
  fs::FileLock gl = fs::FileLock::try_lock(root_ + "/gc.lock", fs::FileLock::Exclusive);
  if (!gl.held()) {
    res.content_kept = true;
    return res;
  }
  sweep(run_root);
  return res;
}

GcResult Store::gc(const std::string& run_root) {
  // No import runs while we hold gc.lock (imports hold it shared), so nothing
  // is added; the index can only lose references while we delete.
  fs::FileLock gl(root_ + "/gc.lock", fs::FileLock::Exclusive);
  return sweep(run_root);
}

GcResult Store::sweep(const std::string& run_root) {
  GcResult res;
  std::set<std::string> blobs, layers;
  {
    fs::FileLock lock(root_ + "/store.lock", fs::FileLock::Exclusive);
    std::vector<ImageRecord> imgs = read_index(root_);
    size_t before = imgs.size();
    imgs.erase(std::remove_if(imgs.begin(), imgs.end(),
                              [&](const ImageRecord& r) {
                                return r.removed && sandboxes_using(run_root, r.id).empty();
                              }),
               imgs.end());
    res.images = before - imgs.size();
    if (res.images) write_index(root_, imgs);
    for (const auto& r : imgs) {
      if (!r.manifest_digest.empty()) blobs.insert(hex_of(r.manifest_digest));
      blobs.insert(r.id);
      for (const auto& d : r.layer_digests) blobs.insert(hex_of(d));
      for (const auto& c : r.chain_ids) layers.insert(hex_of(c));
    }
  }
  for (const auto& b : list_dir(root_ + "/blobs/sha256")) {
    if (blobs.count(b)) continue;
    std::string p = root_ + "/blobs/sha256/" + b;
    struct stat st;
    if (::lstat(p.c_str(), &st) == 0) res.bytes += static_cast<uint64_t>(st.st_size);
    if (::unlink(p.c_str()) < 0 && errno != ENOENT) throw_errno("remove blob " + p);
    ++res.blobs;
  }
  for (const auto& l : list_dir(root_ + "/layers")) {
    if (layers.count(l)) continue;
    // Rename first so a layer disappears at once, never half-deleted in place.
    std::string doomed = root_ + "/tmp/gc-" + l;
    if (::rename((root_ + "/layers/" + l).c_str(), doomed.c_str()) < 0) {
      if (errno == ENOENT) continue;
      throw_errno("move unused layer " + root_ + "/layers/" + l + " to " + doomed);
    }
    remove_tree(doomed);
    ++res.layers;
  }
  for (const auto& t : list_dir(root_ + "/tmp")) {
    if (t.rfind("gc-", 0) != 0) ++res.temps;
    remove_tree(root_ + "/tmp/" + t);
  }
  for (const auto& f : list_dir(root_))  // temp files of an interrupted atomic index write
    if (f.rfind("images.json.tmp.", 0) == 0 && ::unlink((root_ + "/" + f).c_str()) == 0) ++res.temps;
  return res;
}

}  // namespace sbx::oci
