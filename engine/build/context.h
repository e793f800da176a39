// The sources of COPY and ADD: the build context (a directory, or a tar
// unpacked safely into one) filtered by .dockerignore, or another stage's or
// image's file system (COPY --from). Resolves source patterns (globs, ".",
// directories) and hashes what they name for the build cache.
//
// The context is hostile input as much as an image is: a source path that
// leaves it ("../x", an absolute symlink, a symlink climbing out) is an
// error, never followed onto the host.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/build/dockerignore.h"
#include "engine/build/rootfs_view.h"

namespace sbx::build {

/// A tree COPY/ADD can read from.
class SourceTree {
 public:
  /// The build context in the host directory `dir`, with its .dockerignore
  /// rules (`ignore`). Paths that leave `dir` are errors.
  static SourceTree context(const std::string& dir, IgnoreMatcher ignore);
  /// The file system of an image or stage: its layer dirs, TOP FIRST.
  /// Symlinks resolve inside it (as in a container).
  static SourceTree layers(std::vector<std::string> layers_top_first, std::string what);

  /// One match of a source pattern.
  struct Match {
    std::string path;           ///< "/"-rooted path in the tree (symlinks resolved)
    RootfsView::Entry entry;    ///< what is there (a symlink only when not followed)
    std::string name;           ///< the last component as named or matched (before a symlink was followed)
  };
  /// The sources `pattern` names: a path (the last symlink followed) or a
  /// glob (* ? [..] per path component; excluded paths never match). Throws
  /// sbx::Error when nothing matches ("… not found in the build context or
  /// excluded by .dockerignore"), or when the path leaves the context.
  std::vector<Match> sources(const std::string& pattern) const;

  /// Calls `fn(rel, entry)` for `m` and, for a directory, everything below it
  /// (depth first, names sorted), `rel` relative to m.path ("" for m
  /// itself); excluded paths are skipped (a directory's content is still
  /// visited when an exception pattern may re-include some of it).
  template <class F>
  void walk(const Match& m, F&& fn) const {
    walk_at(m.path, "", m.entry, fn);
  }

  /// sha256 (hex) over what `matches` hold: each entry's relative path,
  /// type, permission bits, size, link target and content (not times, not
  /// owners: COPY sets those). What the build cache compares for COPY/ADD.
  std::string digest(const std::vector<Match>& matches) const;

  bool is_context() const { return confined_; }
  const RootfsView& view() const { return view_; }
  const std::string& what() const { return what_; }

  /// Whether `path` ("/"-rooted) is excluded by .dockerignore.
  bool excluded(const std::string& path) const;

 private:
  SourceTree(RootfsView v, IgnoreMatcher ig, bool confined, std::string what)
      : view_(std::move(v)), ignore_(std::move(ig)), confined_(confined), what_(std::move(what)) {}
  template <class F>
  void walk_at(const std::string& path, const std::string& rel, const RootfsView::Entry& e, F& fn) const;
  void glob(const std::vector<std::string>& comps, size_t i, const std::string& at, const std::string& name,
            std::vector<Match>& out) const;

  RootfsView view_;
  IgnoreMatcher ignore_;
  bool confined_;
  std::string what_;  ///< "the build context", "stage build", "image busybox" (messages)
};

template <class F>
void SourceTree::walk_at(const std::string& path, const std::string& rel, const RootfsView::Entry& e, F& fn) const {
  const bool skip = !rel.empty() && excluded(path);
  if (!skip) fn(rel, e);
  if (!S_ISDIR(e.st.st_mode)) return;
  if (skip && !ignore_.has_exceptions()) return;
  for (const auto& name : view_.list(path)) {
    std::string child = path == "/" ? "/" + name : path + "/" + name;
    auto ce = view_.lookup(child);
    if (!ce) continue;
    walk_at(child, rel.empty() ? name : rel + "/" + name, *ce, fn);
  }
}

/// Whether `s` has glob characters (* ? [) that are not escaped.
bool has_glob(const std::string& s);

/// Whether the file at `path` starts like a tar archive: gzip or zstd magic,
/// or a plain tar's "ustar" at offset 257 (POSIX.1-2001 ustar header). A build
/// context given as one file is a context tar when it does, else a Dockerfile
/// alone. False when the file cannot be read.
bool looks_like_archive(const std::string& path);

}  // namespace sbx::build
