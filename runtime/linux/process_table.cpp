#include "runtime/linux/process_table.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace sbx::runtime {

ProcessTable cgroup_process_table(const std::vector<std::string>& cgroups) {
  // Every process of the sandbox: the first of its cgroups that lists them.
  std::vector<std::string> pids;
  for (const auto& cg : cgroups) {
    std::ifstream f(cg + "/cgroup.procs");
    for (std::string p; f >> p;) pids.push_back(p);
    if (!pids.empty()) break;
  }
  long tick = ::sysconf(_SC_CLK_TCK);
  ProcessTable t;
  t.titles = {"UID", "PID", "PPID", "STAT", "TIME", "CMD"};
  for (const auto& pid : pids) {
    std::ifstream sf("/proc/" + pid + "/stat");
    std::string stat((std::istreambuf_iterator<char>(sf)), {});
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;  // gone meanwhile
    std::istringstream rest(stat.substr(close + 2));
    std::string state, ppid, f;
    rest >> state >> ppid;
    uint64_t utime = 0, stime = 0;
    for (int i = 0; i < 9; ++i) rest >> f;  // pgrp … cmajflt
    rest >> utime >> stime;
    std::ifstream cf("/proc/" + pid + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(cf)), {});
    for (auto& ch : cmd)
      if (ch == '\0') ch = ' ';
    while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
    if (cmd.empty()) cmd = "[" + stat.substr(stat.find('(') + 1, close - stat.find('(') - 1) + "]";
    struct stat st {};
    std::string uid = ::stat(("/proc/" + pid).c_str(), &st) == 0 ? std::to_string(st.st_uid) : "?";
    uint64_t secs = (utime + stime) / static_cast<uint64_t>(tick);
    char tm[32];
    std::snprintf(tm, sizeof tm, "%02llu:%02llu:%02llu", static_cast<unsigned long long>(secs / 3600),
                  static_cast<unsigned long long>(secs / 60 % 60), static_cast<unsigned long long>(secs % 60));
    t.rows.push_back({uid, pid, ppid, state, tm, cmd});
  }
  return t;
}

}  // namespace sbx::runtime
