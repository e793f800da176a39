#include "runtime/native/writable_layer.h"

#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "oci/runtime_config.h"
#include "runtime/linux/mountinfo.h"
#include "runtime/linux/sandbox_freezer.h"

namespace sbx::runtime {

namespace {

/// upperdir= of the overlay mounted at "/" in the process's mount namespace.
std::string upper_from_mountinfo(pid_t pid) {
  std::vector<MountInfoLine> mounts;
  try {
    mounts = read_mountinfo(pid);
  } catch (const Error&) {
    return "";
  }
  for (const auto& m : mounts) {
    if (m.point != "/" || m.fstype != "overlay") continue;
    size_t p = m.super_options.find("upperdir=");
    if (p == std::string::npos) continue;
    // the first "/" overlay with an upper dir (the sandbox's root after pivot_root)
    return m.super_options.substr(p + 9, m.super_options.find(',', p) - p - 9);
  }
  return "";
}

}  // namespace

WritableLayer native_writable_layer(const std::string& run_root, const SandboxState& st) {
  WritableLayer out;
  bool alive = state_alive(st);
  std::vector<std::string> cands;
  if (alive) {
    std::string up = upper_from_mountinfo(st.pid);
    if (!up.empty()) cands.push_back(up);
  }
  std::string dir = run_root + "/" + st.id;
  cands.push_back(dir + "/upper");
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_directory(ec) && std::filesystem::is_directory(e.path() / "upper", ec)) cands.push_back((e.path() / "upper").string());
  for (const auto& c : cands)
    if (std::filesystem::is_directory(c, ec)) {
      out.upper_dir = c;
      break;
    }
  if (out.upper_dir.empty())
    throw Error("sandbox " + st.id + " has no disk-backed overlay upper dir (looked in " + dir +
                "); file system snapshots need a sandbox made with 'sbx create' (sbx run keeps its writes on a private tmpfs)");
  freeze_cgroups(run_root, st, out.freeze_cgroups, out.freeze_members);
  sandbox_id_maps(run_root, st, out.uid_map, out.gid_map);
  return out;
}

void sandbox_id_maps(const std::string& run_root, const SandboxState& st, std::vector<IdMapping>& uid_map,
                     std::vector<IdMapping>& gid_map) {
  uid_map.clear();
  gid_map.clear();
  const std::string config = run_root + "/" + st.id + "/config.json";
  if (!fs::exists(config)) return;
  SandboxSpec spec = oci::from_runtime_config(fs::read_file(config));
  uid_map = spec.uid_mappings;
  gid_map = spec.gid_mappings;
}

void freeze_cgroups(const std::string& run_root, const SandboxState& st, std::vector<std::string>& cgroups,
                    std::vector<std::string>& members) {
  cgroups.clear();
  members.clear();
  if (!state_alive(st)) return;
  if (auto f = sandbox_freezer(sandbox_dir(run_root, st.id))) {
    cgroups = f->cgroups;
    members = f->members;
  }
}

}  // namespace sbx::runtime
