// How the CLI shows sandboxes (cli/sandbox_view.h).
#include "cli/sandbox_view.h"

#include <algorithm>
#include <ctime>
#include <iostream>

#include "common/error.h"
#include "common/fs.h"
#include "engine/engine.h"
#include "engine/mount_points.h"
#include "runtime/linux/sandbox_network.h"

namespace sbx::cli {

using nlohmann::json;

std::string rfc3339(int64_t ms) {
  if (ms <= 0) return "";
  time_t s = static_cast<time_t>(ms / 1000);
  struct tm tm;
  ::gmtime_r(&s, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

std::string since(int64_t ms) {
  if (ms <= 0) return "";
  int64_t s = (runtime::now_ms() - ms) / 1000;
  auto n = [](int64_t v, const char* unit) { return std::to_string(v) + " " + unit + (v == 1 ? "" : "s"); };
  if (s < 1) return "Less than a second";
  if (s < 60) return n(s, "second");
  if (s < 3600) return n(s / 60, "minute");
  if (s < 86400) return n(s / 3600, "hour");
  return n(s / 86400, "day");
}

std::string ago(int64_t ms) { return ms <= 0 ? "" : since(ms) + " ago"; }

void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 3, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  }
}

std::string status_text(const runtime::SandboxInfo& i) {
  if (i.status == "running") return "Up " + since(i.state.started_ms ? i.state.started_ms : i.state.created_ms);
  if (i.status == "exited" && i.end) {
    std::string s = "Exited (" + std::to_string(i.end->exit_code) + ")";
    if (i.end->reason != "exit") s += " " + i.end->reason;
    if (i.end->ended_ms) s += " " + ago(i.end->ended_ms);
    return s;
  }
  if (i.status == "dead") return "Dead (create did not finish; sbx rm -f)";
  return i.status;
}

json info_json(const runtime::SandboxInfo& i, bool full, const std::string& root) {
  const auto& st = i.state;
  json state = {{"Status", i.status},
                {"Running", i.status == "running"},
                {"Pid", i.status == "running" ? st.pid : 0},
                {"StartedAt", rfc3339(st.started_ms)},
                {"OOMKilled", i.end && i.end->reason == "oom"},
                {"OomKills", i.oom_kills},
                // Accounting (runtime/linux/cgroup_stats.h): so far, or at the end.
                {"CpuMs", i.usage.cpu_ms},
                {"MaxRssBytes", i.usage.max_rss_bytes},
                {"IoReadBytes", i.usage.io_read_bytes},
                {"IoWriteBytes", i.usage.io_write_bytes},
                {"DurationMs", i.usage.duration_ms}};
  if (i.end) {
    state["ExitCode"] = i.end->exit_code;
    state["Reason"] = i.end->reason;
    state["Signal"] = i.end->signal;
    state["FinishedAt"] = rfc3339(i.end->ended_ms);
  }
  json j = {{"Id", st.id},
            {"Name", st.name},
            {"Image", st.image_ref},
            {"ImageId", st.image_id},
            {"Runtime", st.runtime},
            {"Command", st.command},
            {"Created", rfc3339(st.created_ms)},
            {"Labels", st.labels},
            {"Timeout", st.timeout_ms / 1000.0},
            {"IdleTimeout", st.idle_timeout_ms / 1000.0},
            {"State", state}};
  if (!root.empty()) j["Mounts"] = engine::mount_points_json(engine::sandbox_mount_points(root, i.dir));
  if (full) {
    j["StateDir"] = i.dir;
    j["Cgroups"] = st.cgroups;
    j["NetworkSettings"] = json::parse(runtime::network_settings_json(st.id));
    try {
      j["Config"] = json::parse(fs::read_file(i.dir + "/config.json"));
    } catch (const std::exception&) {
      j["Config"] = nullptr;
    }
  }
  return j;
}

std::string format_sandbox(const std::string& tmpl, const runtime::SandboxInfo& i, bool no_trunc) {
  std::string out;
  size_t pos = 0;
  while (pos < tmpl.size()) {
    size_t open = tmpl.find("{{", pos);
    std::string lit = tmpl.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
    for (size_t t; (t = lit.find("\\t")) != std::string::npos;) lit.replace(t, 2, "\t");
    out += lit;
    if (open == std::string::npos) break;
    size_t close = tmpl.find("}}", open);
    if (close == std::string::npos) throw Error(ErrorKind::InvalidArgument,
                "invalid --format '" + tmpl + "': '{{' without '}}'");
    std::string field = tmpl.substr(open + 2, close - open - 2);
    field.erase(0, field.find_first_not_of(' '));
    field.erase(field.find_last_not_of(' ') + 1);
    std::string cmdline;
    for (const auto& a : i.state.command) cmdline += (cmdline.empty() ? "" : " ") + a;
    if (field == ".ID") out += no_trunc ? i.state.id : i.state.id.substr(0, 12);
    else if (field == ".Names") out += i.state.name;
    else if (field == ".Image") out += i.state.image_ref;
    else if (field == ".Status") out += status_text(i);
    else if (field == ".State") out += i.status;
    else if (field == ".Command") out += cmdline;
    else if (field == ".CpuMs") out += std::to_string(i.usage.cpu_ms);
    else if (field == ".MaxRssBytes") out += std::to_string(i.usage.max_rss_bytes);
    else if (field == ".IoReadBytes") out += std::to_string(i.usage.io_read_bytes);
    else if (field == ".IoWriteBytes") out += std::to_string(i.usage.io_write_bytes);
    else if (field == ".DurationMs") out += std::to_string(i.usage.duration_ms);
    else
      throw Error(ErrorKind::InvalidArgument, "invalid --format field {{" + field + "}}: use .ID .Names .Image .Status .State .Command .CpuMs "
                  ".MaxRssBytes .IoReadBytes .IoWriteBytes .DurationMs");
    pos = close + 2;
  }
  return out;
}

std::vector<runtime::SandboxInfo> list(const Globals& g, bool all, const std::vector<std::string>& filters) {
  return make_engine(g).list({all, filters});
}


std::vector<std::string> resolve_all(const Globals& g, const std::vector<std::string>& refs) {
  auto eng = make_engine(g);
  std::vector<std::string> ids;
  for (const auto& r : refs) ids.push_back(eng.resolve(r));
  return ids;
}


}  // namespace sbx::cli
