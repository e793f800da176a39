#include "gpu/devnode.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>

#include "common/error.h"

namespace sbx::gpu {

DeviceNode stat_device_node(const std::string& host_path, const std::string& container_path) {
  struct stat st;
  if (::stat(host_path.c_str(), &st) < 0) {
    if (errno == ENOENT)
      throw Error(ErrorKind::NotFound, "device node " + host_path + " does not exist; is the driver loaded (for NVIDIA: run 'nvidia-smi' "
                  "or 'nvidia-modprobe' once on the host to create the nodes)?", ENOENT);
    throw_errno("stat device node " + host_path);
  }
  DeviceNode n;
  if (S_ISCHR(st.st_mode))
    n.type = 'c';
  else if (S_ISBLK(st.st_mode))
    n.type = 'b';
  else
    throw Error(host_path + " is not a character or block device node");
  n.path = container_path;
  if (host_path != container_path) n.host_path = host_path;
  n.major = major(st.st_rdev);
  n.minor = minor(st.st_rdev);
  n.file_mode = st.st_mode & 07777;
  return n;
}

void add_device(SandboxSpec& spec, const DeviceNode& node, const std::string& access) {
  auto it = std::find_if(spec.devices.begin(), spec.devices.end(), [&](const DeviceNode& d) { return d.path == node.path; });
  if (it != spec.devices.end())
    *it = node;
  else
    spec.devices.push_back(node);
  bool have = std::any_of(spec.resources.devices.begin(), spec.resources.devices.end(), [&](const DeviceRule& r) {
    return r.allow && r.type == node.type && r.major == node.major && r.minor == node.minor && r.access == access;
  });
  if (!have) spec.resources.devices.push_back(DeviceRule{true, node.type, node.major, node.minor, access});
}

void set_env(SandboxSpec& spec, const std::string& key, const std::string& value) {
  std::string prefix = key + "=";
  for (auto& e : spec.process.env)
    if (e.compare(0, prefix.size(), prefix) == 0) {
      e = prefix + value;
      return;
    }
  spec.process.env.push_back(prefix + value);
}

void add_ro_bind(SandboxSpec& spec, const std::string& source, const std::string& destination) {
  for (const auto& m : spec.mounts)
    if (m.destination == destination && m.source == source) return;
  spec.mounts.push_back(Mount{destination, "bind", source, {"bind", "ro", "nosuid", "nodev"}});
}

}  // namespace sbx::gpu
