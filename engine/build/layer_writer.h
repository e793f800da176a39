// The new layer of a COPY or ADD step, written as an overlay upper dir would
// hold it: a staging directory on top of the image's layers. Destinations
// resolve through the merged view (the staging dir first), so a write under
// a symlinked directory of the image (Debian's /bin -> usr/bin) lands where
// the link points; directories written into are copied up with their owner,
// mode and times, as overlayfs copies them up; new directories are made as
// the Dockerfile reference says (0755, the --chown owner). The staging
// directory is then turned into a layer tar by snapshot/upper_to_layer.
//
// Only sbx writes the staging directory; names come from the context or an
// image, so every component is checked to be a real directory before
// anything is created below it.
#pragma once
#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "engine/build/context.h"
#include "engine/build/rootfs_view.h"

namespace sbx::build {

/// Owner and mode rules of one COPY/ADD.
struct CopyAttrs {
  std::optional<uid_t> uid;      ///< --chown user (else: 0, or the source's owner with keep_owner)
  std::optional<gid_t> gid;      ///< --chown group
  std::optional<mode_t> chmod;   ///< --chmod (permission bits, set-id and sticky included)
  bool keep_owner = false;       ///< COPY --from without --chown: owners as in the source
};

class LayerWriter {
 public:
  /// `staging`: an empty directory; `image_layers`: the image's layer dirs,
  /// TOP FIRST.
  LayerWriter(std::string staging, std::vector<std::string> image_layers);

  /// The merged view: staging dir first, then the image.
  const RootfsView& view() const { return view_; }

  /// Resolves `path` (absolute, in the image) through the view, following
  /// every symlink (the destination of COPY/ADD).
  RootfsView::Resolved resolve(const std::string& path) const { return view_.resolve(path, true); }

  /// Makes `dir` (a resolved path) and its parents exist as directories in
  /// the staging dir: copied up from the image where they exist there,
  /// else new (0755, `uid`/`gid`). Throws sbx::Error when a non-directory is
  /// in the way.
  void ensure_dir(const std::string& dir, uid_t uid, gid_t gid);

  /// Copies the source `m` of `tree` to the resolved destination `dest` (a
  /// directory source: its content into `dest`). Owners and modes per `a`.
  void copy(const SourceTree& tree, const SourceTree::Match& m, const std::string& dest, const CopyAttrs& a);

  /// Writes a regular file with `content` at the resolved path `dest`
  /// (COPY <<EOF, ADD of a URL): mode 0644 (or --chmod; `mode` when given),
  /// owner per `a`, mtime `mtime` (seconds; 0: now).
  void write_file(const std::string& dest, const std::string& content, const CopyAttrs& a,
                  std::optional<mode_t> mode = std::nullopt, time_t mtime = 0);

  /// Sets the times of copied-up directories back (adding entries changed
  /// them). Call once, after the last write.
  void finish();

  /// Whether nothing was written.
  bool empty() const;

 private:
  void copy_entry(const SourceTree& tree, const std::string& rel_src, const RootfsView::Entry& e,
                  const std::string& dest, const CopyAttrs& a, bool is_root);
  std::string host(const std::string& path) const { return staging_ + path; }
  /// Removes what the staging dir has at `path` (replaced by a new entry).
  void clear(const std::string& path);

  std::string staging_;
  RootfsView view_;
  struct DirTimes {
    std::string path;
    struct timespec mtime;
  };
  std::vector<DirTimes> copied_up_;
};

/// --chmod=MODE: octal ("755", "0644", "4755"). Throws sbx::Error otherwise.
mode_t parse_chmod(const std::string& text);

/// --chown=USER[:GROUP] resolved in the view of the image (its /etc/passwd
/// and /etc/group): names or numbers; a user alone gives gid = uid (as the
/// Dockerfile reference says). Throws sbx::Error for an unknown name.
std::pair<uid_t, gid_t> resolve_chown(const std::string& text, const RootfsView& image);

}  // namespace sbx::build
