// A read-only view of a file system made of layer directories, merged as
// overlayfs merges them (kernel Documentation/filesystems/overlayfs.rst),
// without mounting anything: what COPY and ADD need to resolve a
// destination through the image's symlinks (Debian's /bin -> usr/bin), to
// copy up the metadata of the directories they write into, and to read the
// files of another stage (COPY --from).
//
// Layer directories are in the store's unpacked format (oci/unpack.h): a
// whiteout is a 0/0 character device, an opaque directory carries the xattr
// trusted.overlay.opaque=y. A plain directory (the build context) is a view
// of one layer; there `plain` turns whiteout and opaque handling off.
//
// Names come from hostile input (the image, the context): a lookup never
// follows a symlink of a layer on the host; symlinks are followed only by
// resolve(), inside the view, as a process chrooted into it would (absolute
// targets and ".." start again at the view's root; with `confined`, a step out
// of the root is an error instead, which is what a build context needs).
#pragma once
#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

namespace sbx::build {

class RootfsView {
 public:
  /// `layers`: the layer directories, TOP FIRST (the overlay lowerdir order).
  explicit RootfsView(std::vector<std::string> layers, bool plain = false);

  /// One existing entry.
  struct Entry {
    std::string host_path;  ///< where it is on the host (in the layer that provides it)
    struct stat st {};      ///< its lstat
    size_t layer = 0;       ///< index of that layer (0: top)
  };

  /// `path` (absolute or relative to the root, "/" separated), with no
  /// symlink followed (each component is a name in the merged directory
  /// above it). nullopt when absent, whited out or under a non-directory.
  std::optional<Entry> lookup(const std::string& path) const;

  struct Resolved {
    std::string path;  ///< the path reached, "/"-rooted, symlinks replaced ("/usr/bin/x")
    std::optional<Entry> entry;  ///< what is there (nullopt: nothing yet)
  };
  /// Follows symlinks in every component of `path` but the last (and the
  /// last too when `follow_last`). Throws sbx::Error for a symlink loop (more
  /// than 40 links), and with `confined` for a link or ".." that leaves the
  /// root ("… points outside …").
  Resolved resolve(const std::string& path, bool follow_last, bool confined = false) const;

  /// The names in the merged directory at `path` (no symlink followed),
  /// sorted; whiteouts and what they hide are left out. Empty when it is not
  /// a directory.
  std::vector<std::string> list(const std::string& path) const;

  const std::vector<std::string>& layers() const { return layers_; }

 private:
  /// lookup(), and the layers whose directories merge at `path` (top first).
  std::optional<Entry> walk(const std::string& path, std::vector<size_t>* merged) const;
  std::vector<std::string> layers_;
  bool plain_;
};

/// "/"-rooted and cleaned: "a/../b//c" -> "/b/c".
std::string rooted(const std::string& path);

/// Whether `st` is an overlay whiteout (a 0/0 character device).
bool is_whiteout(const struct stat& st);

}  // namespace sbx::build
