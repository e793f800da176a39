#include "ocirt/state_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "ocirt/cgroup_paths.h"

namespace sbx::ocirt {

using nlohmann::json;

void check_id(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 1024 && id != "." && id != "..";
  for (char c : id) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '+' || c == '.' || c == '-');
  if (!ok) throw Error("invalid container id '" + id + "': use letters, digits and _ + . - (at most 1024)");
}

std::string container_dir(const std::string& root, const std::string& id) { return root + "/" + id; }

void save_state(const std::string& root, const ContainerState& st) {
  json j = {{"id", st.id}, {"bundle", st.bundle}, {"ociVersion", st.oci_version}, {"pid", st.pid},
            {"pid_start", st.pid_start}, {"created", st.created}, {"cgroup_dirs", st.cgroup_dirs},
            {"annotations", st.annotations}};
  std::string dir = container_dir(root, st.id);
  std::string tmp = dir + "/state.json.tmp", path = dir + "/state.json";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) throw_errno("write " + tmp);
    f << j.dump();
    if (!f.flush()) throw_errno("write " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) < 0) throw_errno("rename " + tmp + " to " + path);
}

ContainerState load_state(const std::string& root, const std::string& id) {
  check_id(id);
  std::string path = container_dir(root, id) + "/state.json";
  std::ifstream f(path);
  if (!f) throw Error("container \"" + id + "\" does not exist (no " + path + ")", ENOENT);
  try {
    json j = json::parse(f);
    ContainerState st;
    st.id = j.at("id").get<std::string>();
    st.bundle = j.value("bundle", "");
    st.oci_version = j.value("ociVersion", "");
    st.pid = j.value("pid", 0);
    st.pid_start = j.value("pid_start", uint64_t{0});
    st.created = j.value("created", "");
    st.cgroup_dirs = j.value("cgroup_dirs", std::vector<std::string>{});
    st.annotations = j.value("annotations", std::map<std::string, std::string>{});
    return st;
  } catch (const json::exception& e) {
    throw Error("container \"" + id + "\": corrupt " + path + ": " + e.what() + " (remove it with delete --force)");
  }
}

std::vector<std::string> list_ids(const std::string& root) {
  std::vector<std::string> out;
  DIR* d = ::opendir(root.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (::access((root + "/" + n + "/state.json").c_str(), F_OK) == 0) out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t process_start_time(pid_t pid) noexcept {
  if (pid <= 0) return 0;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(f, s)) return 0;
  auto rp = s.rfind(')');
  if (rp == std::string::npos) return 0;
  std::istringstream rest(s.substr(rp + 2));
  std::string field;
  // Fields after the command: 3 (state) .. 22 (starttime).
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return 0;
    if (i == 3 && field == "Z") return 0;  // a zombie has ended
  }
  try {
    return std::stoull(field);
  } catch (...) {
    return 0;
  }
}

bool same_process(pid_t pid, uint64_t start) noexcept {
  uint64_t now = process_start_time(pid);
  return now != 0 && now == start;
}

std::string current_status(const std::string& root, const ContainerState& st) {
  if (st.pid <= 0) return "creating";
  if (!same_process(st.pid, st.pid_start)) return "stopped";
  if (::access((container_dir(root, st.id) + "/exec.fifo").c_str(), F_OK) == 0) return "created";
  if (CgroupPaths::from_dirs(st.cgroup_dirs).frozen()) return "paused";
  return "running";
}

std::string state_json(const ContainerState& st, const std::string& status, bool pretty) {
  json j = {{"ociVersion", st.oci_version.empty() ? "1.0.2" : st.oci_version}, {"id", st.id}, {"status", status}};
  if (status != "stopped") j["pid"] = st.pid;
  else j["pid"] = 0;
  j["bundle"] = st.bundle;
  j["created"] = st.created;
  j["annotations"] = st.annotations;
  return pretty ? j.dump(2) : j.dump();
}

std::string now_rfc3339() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  ::gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &t);
  char out[96];
  std::snprintf(out, sizeof out, "%s.%09ldZ", buf, static_cast<long>(ts.tv_nsec));
  return out;
}

}  // namespace sbx::ocirt
