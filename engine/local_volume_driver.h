// Docker's local volume driver's options (`docker volume create --opt`,
// compose's `driver_opts`): what sbx's local driver makes of them, for the
// store's create (which checks them) and the attach (which mounts them).
// Docker's reference: https://docs.docker.com/reference/cli/docker/volume/create/
#pragma once
#include <map>
#include <string>
#include <vector>

namespace sbx::engine {

/// What a volume's local-driver options (docker's `--opt`) make of it.
struct LocalVolume {
  enum class Kind { Directory, Tmpfs, Bind } kind = Kind::Directory;
  std::vector<std::string> tmpfs;  ///< Tmpfs: its mount options (size in bytes, mode, nr_inodes)
  std::string device;              ///< Bind: the host directory it binds (absolute)
  bool read_only = false;          ///< Bind: o=bind,ro
};

/// Reads Docker's local-driver options `opts`: none, a plain directory
/// volume; type=tmpfs (o=size=…,mode=…,nr_inodes=…, device=tmpfs), a tmpfs
/// volume; type=none o=bind[,ro] device=/HOST/DIR, a volume that is a bind
/// of a host directory (compose's `driver_opts` for a named bind). Throws
/// sbx::Error: InvalidArgument for a malformed value, Unsupported for what
/// sbx's local driver does not do (other types, block devices, a size quota
/// on a directory volume).
LocalVolume local_volume(const std::map<std::string, std::string>& opts);

}  // namespace sbx::engine
