#include "engine/mount_flags.h"

#include <stdlib.h>

#include "common/error.h"
#include "common/text.h"
#include "engine/volumes.h"

namespace sbx::engine {

spec::Mount host_dir_bind(const std::string& dst, const std::string& host_dir, bool ro, const std::string& what,
                          const std::string& hint) {
  char* real = ::realpath(host_dir.c_str(), nullptr);
  if (!real) {
    if (hint.empty()) throw_errno(what);
    throw_errno_hint(what, hint);
  }
  spec::Mount m{dst, "bind", real, {"rbind"}};
  ::free(real);
  if (ro) m.options.push_back("ro");
  return m;
}

spec::Mount parse_volume_mount(const std::string& text, const std::string& what) {
  std::vector<std::string> parts = split(text, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty())
    throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "': expected NAME:CONTAINER-DIR[:ro]");
  check_volume_name(parts[0], what + " '" + text + "': volume name");
  if (parts[1][0] != '/')
    throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "': the container path must be absolute");
  spec::Mount m{parts[1], kVolumeMountType, parts[0], {}};
  if (parts.size() == 3)
    for (const auto& o : split(parts[2], ',')) {
      if (o == "ro" || o == "nocopy") {
        m.options.push_back(o);
      } else if (o == "rw" || o == "z" || o == "Z" || o == "copy") {
        // the default, or SELinux labels sbx has no use for
      } else {
        throw Error(ErrorKind::InvalidArgument,
                    "invalid " + what + " '" + text + "': unknown option '" + o + "' for a volume (ro, rw, nocopy)");
      }
    }
  return m;
}

spec::Mount parse_mount_flag(const std::string& text, const std::string& what) {
  std::string type = "volume", src, dst;
  bool ro = false, nocopy = false;
  std::vector<std::string> tmpfs_opts;
  for (const auto& kv : split(text, ',')) {
    size_t eq = kv.find('=');
    std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (k == "type") {
      type = v;
    } else if (k == "source" || k == "src") {
      src = v;
    } else if (k == "destination" || k == "dst" || k == "target") {
      dst = v;
    } else if (k == "readonly" || k == "ro") {
      ro = eq == std::string::npos || v == "true" || v == "1";
    } else if (k == "volume-nocopy") {
      nocopy = eq == std::string::npos || v == "true" || v == "1";
    } else if (k == "tmpfs-size") {
      tmpfs_opts.push_back("size=" + v);
    } else if (k == "tmpfs-mode") {
      tmpfs_opts.push_back("mode=" + v);
    } else if (k == "bind-propagation" && (v == "rprivate" || v == "private")) {
      // sbx's mounts are private
    } else {
      throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "': unknown key '" + k +
                                                  "' (type, source, target, readonly, volume-nocopy, tmpfs-size, "
                                                  "tmpfs-mode)");
    }
  }
  if (dst.empty() || dst[0] != '/')
    throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "': give an absolute target=/PATH");
  if (type == "volume") {
    // No source: an anonymous volume, made when the sandbox is (docker's).
    if (!src.empty()) check_volume_name(src, what + " '" + text + "': volume name");
    spec::Mount m{dst, kVolumeMountType, src, {}};
    if (ro) m.options.push_back("ro");
    if (nocopy) m.options.push_back("nocopy");
    return m;
  }
  if (type == "bind") {
    if (src.empty() || src[0] != '/')
      throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "': a bind needs an absolute source=");
    return host_dir_bind(dst, src, ro, what + " source " + src);
  }
  if (type == "tmpfs") {
    spec::Mount m{dst, "tmpfs", "tmpfs", {"nosuid", "nodev", "noexec"}};
    for (auto& o : tmpfs_opts) m.options.push_back(o);
    if (ro) m.options.push_back("ro");
    return m;
  }
  throw Error(ErrorKind::InvalidArgument,
              "invalid " + what + " '" + text + "': unknown type '" + type + "' (bind, volume, tmpfs)");
}

}  // namespace sbx::engine
