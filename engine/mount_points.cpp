#include "engine/mount_points.h"

#include <algorithm>

#include "common/fs.h"
#include "engine/volumes.h"
#include "oci/runtime_config.h"

namespace sbx::engine {

std::vector<MountPoint> mount_points(const std::string& root, const std::vector<spec::Mount>& mounts) {
  std::vector<MountPoint> out;
  for (const auto& m : mounts) {
    bool ro = std::find(m.options.begin(), m.options.end(), "ro") != m.options.end();
    if (m.type == kVolumeMountType) {
      out.push_back({"volume", m.source, volumes_dir(root) + "/" + m.source + "/_data", m.destination, ro});
    } else if (m.type == "bind" || m.type == "tmpfs") {
      // (a tmpfs volume's mount names the volume's _data as its source)
      std::string vol = volume_of_source(root, m.source);
      if (vol.empty() && m.type == "tmpfs") continue;
      out.push_back({vol.empty() ? "bind" : "volume", vol, m.source, m.destination, ro});
    }
  }
  return out;
}

std::vector<MountPoint> sandbox_mount_points(const std::string& root, const std::string& sandbox_dir) {
  try {
    return mount_points(root, oci::from_runtime_config(fs::read_file(sandbox_dir + "/config.json")).mounts);
  } catch (const std::exception&) {
    return {};  // being removed, or made by an older sbx
  }
}

nlohmann::json mount_points_json(const std::vector<MountPoint>& points) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : points) {
    nlohmann::json j = {{"Type", p.type}, {"Source", p.source}, {"Destination", p.destination}};
    if (p.type == "volume") {
      j["Name"] = p.name;
      j["Driver"] = "local";
      j["Mode"] = p.read_only ? "ro" : "z";
      j["Propagation"] = "";
    } else {
      j["Mode"] = p.read_only ? "ro" : "";
      j["Propagation"] = "rprivate";
    }
    j["RW"] = !p.read_only;
    out.push_back(j);
  }
  return out;
}

}  // namespace sbx::engine
