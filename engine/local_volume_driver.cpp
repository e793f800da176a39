#include "engine/local_volume_driver.h"

#include "common/error.h"
#include "common/text.h"
#include "common/units.h"

namespace sbx::engine {

LocalVolume local_volume(const std::map<std::string, std::string>& opts) {
  LocalVolume out;
  if (opts.empty()) return out;
  for (const auto& [k, v] : opts) {
    if (k == "size")
      throw Error(ErrorKind::Unsupported,
                  "volume option size=" + v + ": a size quota on a directory volume needs project quotas, which sbx "
                  "does not use; for a volume of bounded size give --opt type=tmpfs --opt o=size=" + v);
    if (k != "type" && k != "o" && k != "device")
      throw Error(ErrorKind::InvalidArgument,
                  "invalid volume option '" + k + "': the local driver takes type, o and device");
  }
  auto get = [&opts](const char* k) {
    auto it = opts.find(k);
    return it == opts.end() ? std::string() : it->second;
  };
  std::string type = get("type"), device = get("device");
  if (type == "none") {
    bool bind = false;
    for (const auto& o : split(get("o"), ',')) {
      if (o == "bind" || o == "rbind") bind = true;
      else if (o == "ro") out.read_only = true;
      else if (!o.empty() && o != "rw")
        throw Error(ErrorKind::InvalidArgument, "invalid volume option o=" + get("o") + ": '" + o +
                                                    "' (a bind volume takes o=bind, o=bind,ro)");
    }
    if (!bind)
      throw Error(ErrorKind::InvalidArgument,
                  "invalid volume options: type=none needs o=bind and device=/HOST/DIR (a bind of a host directory)");
    if (device.empty() || device[0] != '/' || device.find('\0') != std::string::npos)
      throw Error(ErrorKind::InvalidArgument, "invalid volume option device=" + device +
                                                  ": a bind volume's device is an absolute host directory");
    out.kind = LocalVolume::Kind::Bind;
    out.device = device;
    return out;
  }
  if (type != "tmpfs")
    throw Error(ErrorKind::Unsupported,
                "volume option type=" + (type.empty() ? std::string("(none)") : type) +
                    " is not supported: sbx's local driver makes directory volumes (no options), tmpfs volumes "
                    "(--opt type=tmpfs --opt o=size=64m) and binds of a host directory (--opt type=none --opt o=bind "
                    "--opt device=/HOST/DIR); it mounts no block devices or network file systems");
  if (!device.empty() && device != "tmpfs")
    throw Error(ErrorKind::InvalidArgument, "invalid volume option device=" + device + ": a tmpfs volume's device is tmpfs");
  out.kind = LocalVolume::Kind::Tmpfs;
  for (const auto& o : split(get("o"), ',')) {
    if (o.empty()) continue;
    size_t eq = o.find('=');
    std::string k = o.substr(0, eq), v = eq == std::string::npos ? "" : o.substr(eq + 1);
    if (k == "size") {
      out.tmpfs.push_back("size=" + std::to_string(units::parse_size(v, "volume option o=size")));
    } else if (k == "mode" && !v.empty() && v.size() <= 4 && v.find_first_not_of("01234567") == std::string::npos) {
      out.tmpfs.push_back("mode=" + v);
    } else if (k == "nr_inodes" && !v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
      out.tmpfs.push_back(o);
    } else {
      throw Error(ErrorKind::InvalidArgument, "invalid volume option o=" + get("o") + ": '" + o +
                                                  "' (a tmpfs volume takes size=N[k|m|g], mode=OCTAL, nr_inodes=N)");
    }
  }
  return out;
}

}  // namespace sbx::engine
