#include "engine/build/rootfs_view.h"

#include <dirent.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "common/error.h"
#include "engine/build/dockerignore.h"

namespace sbx::build {

namespace {

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool opaque(const std::string& host_path) {
  char v[2] = {};
  ssize_t n = ::lgetxattr(host_path.c_str(), "trusted.overlay.opaque", v, sizeof v);
  return n == 1 && v[0] == 'y';
}

}  // namespace

std::string rooted(const std::string& path) {
  std::string c = clean_path("/" + path);
  return c;
}

bool is_whiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0); }

RootfsView::RootfsView(std::vector<std::string> layers, bool plain) : layers_(std::move(layers)), plain_(plain) {}

std::optional<RootfsView::Entry> RootfsView::walk(const std::string& path, std::vector<size_t>* merged) const {
  if (layers_.empty()) return std::nullopt;
  auto comps = components(rooted(path));
  // The layers that contribute to the directory reached so far, top first.
  std::vector<size_t> cand;
  std::optional<Entry> found;
  for (size_t i = 0; i < layers_.size(); ++i) {
    struct stat st;
    if (::lstat(layers_[i].c_str(), &st) < 0) throw_errno("stat the layer " + layers_[i]);
    if (!found) found = Entry{layers_[i], st, i};
    cand.push_back(i);
    if (!plain_ && opaque(layers_[i])) break;
  }
  std::string rel;
  for (size_t k = 0; k < comps.size(); ++k) {
    rel += "/" + comps[k];
    std::vector<size_t> next;
    found.reset();
    for (size_t idx : cand) {
      std::string hp = layers_[idx] + rel;
      struct stat st;
      if (::lstat(hp.c_str(), &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR) continue;
        throw_errno("stat " + hp);
      }
      if (!plain_ && is_whiteout(st)) break;  // hides this and what is further down
      if (!found) found = Entry{hp, st, idx};
      if (!S_ISDIR(st.st_mode) || !S_ISDIR(found->st.st_mode)) break;  // a non-directory hides further layers
      next.push_back(idx);
      if (!plain_ && opaque(hp)) break;
    }
    if (!found) return std::nullopt;
    if (k + 1 < comps.size() && !S_ISDIR(found->st.st_mode)) return std::nullopt;
    cand = std::move(next);
  }
  if (merged) *merged = std::move(cand);
  return found;
}

std::optional<RootfsView::Entry> RootfsView::lookup(const std::string& path) const { return walk(path, nullptr); }

RootfsView::Resolved RootfsView::resolve(const std::string& path, bool follow_last, bool confined) const {
  std::vector<std::string> todo = components(path);
  std::reverse(todo.begin(), todo.end());  // a stack: next component at the back
  std::vector<std::string> cur;
  int links = 0;
  auto joined = [&] {
    std::string s;
    for (const auto& c : cur) s += "/" + c;
    return s.empty() ? std::string("/") : s;
  };
  std::optional<Entry> entry = lookup("/");
  while (!todo.empty()) {
    std::string c = todo.back();
    todo.pop_back();
    if (c == ".") continue;
    if (c == "..") {
      if (cur.empty()) {
        if (confined) throw Error("'" + path + "' points outside the build context (through '..')");
      } else {
        cur.pop_back();
      }
      entry = lookup(joined());
      continue;
    }
    cur.push_back(c);
    entry = lookup(joined());
    if (!entry) {
      // Nothing here: the rest of the path names things still to be made.
      for (auto it = todo.rbegin(); it != todo.rend(); ++it)
        if (*it != ".") cur.push_back(*it);
      Resolved r{rooted(joined()), std::nullopt};
      if (confined && r.path != joined()) throw Error("'" + path + "' points outside the build context");
      return r;
    }
    if (S_ISLNK(entry->st.st_mode) && (!todo.empty() || follow_last)) {
      if (++links > 40) throw Error("too many levels of symbolic links in '" + path + "'");
      std::string target(static_cast<size_t>(entry->st.st_size) + 1, '\0');
      ssize_t n = ::readlink(entry->host_path.c_str(), target.data(), target.size());
      if (n < 0) throw_errno("read the symlink " + entry->host_path);
      target.resize(static_cast<size_t>(n));
      cur.pop_back();
      if (!target.empty() && target[0] == '/') {
        if (confined)
          throw Error("'" + path + "': the symlink '" + joined() + "/" + c + "' -> '" + target +
                      "' points outside the build context");
        cur.clear();
      }
      auto tc = components(target);
      for (auto it = tc.rbegin(); it != tc.rend(); ++it) todo.push_back(*it);
      entry = lookup(joined());
      continue;
    }
    if (!todo.empty() && !S_ISDIR(entry->st.st_mode)) {
      // A file in the middle of a path: nothing can be below it.
      for (auto it = todo.rbegin(); it != todo.rend(); ++it) cur.push_back(*it);
      return {joined(), std::nullopt};
    }
  }
  return {joined(), entry};
}

std::vector<std::string> RootfsView::list(const std::string& path) const {
  std::vector<std::string> out;
  std::vector<size_t> cand;
  auto e = walk(path, &cand);
  if (!e || !S_ISDIR(e->st.st_mode)) return out;
  const std::string rel = rooted(path) == "/" ? "" : rooted(path);
  std::set<std::string> seen;
  for (size_t idx : cand) {
    std::string hp = layers_[idx] + rel;
    DIR* d = ::opendir(hp.c_str());
    if (!d) throw_errno("read the directory " + hp);
    while (dirent* de = ::readdir(d)) {
      std::string n = de->d_name;
      if (n == "." || n == ".." || seen.count(n)) continue;
      seen.insert(n);
      struct stat st;
      if (!plain_ && ::lstat((hp + "/" + n).c_str(), &st) == 0 && is_whiteout(st)) continue;
      out.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace sbx::build
