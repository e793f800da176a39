#include "snapshot/sandbox_fs.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"

namespace sbx::snapshot {

GvisorCheckpointRequest gvisor_request(const std::string& run_root, const runtime::SandboxState& st) {
  const std::string dir = run_root + "/" + st.id;
  GvisorCheckpointRequest r;
  r.runsc_root = dir + "/runsc";
  r.bundle = dir + "/bundle";
  r.container_id = st.id;
  r.parent = st.id;
  r.image = st.image_id.empty() ? st.image_ref : st.image_id;
  if (!fs::exists(dir + "/meta.json") || !fs::exists(r.bundle + "/config.json"))
    throw Error("sandbox " + st.id + " has no gvisor bundle and meta.json in " + dir + "; it was not started by a version of sbx that can checkpoint it");
  try {
    auto m = nlohmann::json::parse(fs::read_file(dir + "/meta.json"));
    r.layer_dirs = m.value("layer_dirs", std::vector<std::string>{});
    r.runsc_flags = m.value("runsc_flags", std::vector<std::string>{});
    if (r.image.empty()) r.image = m.value("image", "");
  } catch (const nlohmann::json::exception& e) {
    throw Error(dir + "/meta.json is corrupt: " + e.what());
  }
  return r;
}

}  // namespace sbx::snapshot
