#include "runtime/state.h"
#include "runtime/userns.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/cgroups.h"

namespace sbx::runtime {

void write_state(const std::string& dir, const SandboxState& st) {
  nlohmann::json j = {{"id", st.id},           {"name", st.name},       {"image_id", st.image_id},
                      {"image_ref", st.image_ref}, {"runtime", st.runtime}, {"status", st.status},
                      {"pid", st.pid},         {"pid_start", st.pid_start}, {"created_ms", st.created_ms},
                      {"cgroups", st.cgroups}};
  // Temp file + rename (readers never see half a file) but no fsync: the run
  // root is volatile state (tmpfs /run), and an fsync on a disk-backed run
  // root costs milliseconds on every sandbox start.
  std::string data = j.dump(2) + "\n", tmp = dir + "/.state.json.tmp", path = dir + "/state.json";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno("create " + tmp);
  ssize_t n = ::write(fd, data.data(), data.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(data.size())) throw_errno("write " + tmp, n < 0 ? e : EIO);
  if (::rename(tmp.c_str(), path.c_str()) < 0) throw_errno("rename " + tmp + " to " + path);
}

SandboxState read_state(const std::string& dir) {
  std::string text = fs::read_file(dir + "/state.json");
  try {
    auto j = nlohmann::json::parse(text);
    SandboxState st;
    st.id = j.value("id", "");
    st.name = j.value("name", "");
    st.image_id = j.value("image_id", "");
    st.image_ref = j.value("image_ref", "");
    st.runtime = j.value("runtime", "native");
    st.status = j.value("status", "");
    st.pid = j.value("pid", 0);
    st.pid_start = j.value("pid_start", uint64_t{0});
    st.created_ms = j.value("created_ms", int64_t{0});
    st.cgroups = j.value("cgroups", std::vector<std::string>{});
    return st;
  } catch (const nlohmann::json::exception& e) {
    throw Error("malformed " + dir + "/state.json: " + e.what());
  }
}

uint64_t process_start_time(pid_t pid) {
  std::string text;
  try {
    text = fs::read_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (const Error&) {
    return 0;
  }
  // Field 2 (comm) may hold spaces and ')': fields resume after the last ')'.
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  const char* p = text.c_str() + close + 2;
  for (int field = 3; field < 22 && *p; ++field) {
    p = std::strchr(p, ' ');
    if (!p) return 0;
    ++p;
  }
  return std::strtoull(p, nullptr, 10);
}

bool state_alive(const SandboxState& st) {
  if (st.pid <= 0) return false;
  uint64_t t = process_start_time(st.pid);
  return t != 0 && (st.pid_start == 0 || t == st.pid_start);
}

std::vector<std::string> gc(const std::string& run_root) {
  std::vector<std::string> removed;
  if (DIR* d = ::opendir(run_root.c_str())) {
    time_t now = ::time(nullptr);
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.' || std::strlen(e->d_name) != 64) continue;
      std::string dir = run_root + "/" + e->d_name;
      bool dead;
      try {
        dead = !state_alive(read_state(dir));
      } catch (const Error&) {
        // No state.json: a start in progress, or one killed before it wrote it.
        struct stat st {};
        dead = ::stat(dir.c_str(), &st) == 0 && now - st.st_ctime > 10;
      }
      if (!dead) continue;
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      if (!ec) removed.push_back(dir);
    }
    ::closedir(d);
  }
  for (auto& c : gc_stale_cgroups(2)) removed.push_back(c);
  // User-namespace ranges (runtime/userns.h) of sandboxes whose state dir is gone.
  for (auto& r : gc_id_ranges(run_root)) removed.push_back(r);
  return removed;
}

}  // namespace sbx::runtime
