// sbx stats [ID…]: live resource usage of running sandboxes, podman's columns
// (engine::Engine::stats → runtime/linux/cgroup_stats.h).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/commands.h"
#include "common/error.h"
#include "common/units.h"

namespace sbx::cli {

namespace {

using json = nlohmann::json;

struct StatsFlags {
  std::vector<std::string> refs;
  bool no_stream = false, json = false, no_trunc = false, all = false;
  double interval = 5;
};

struct Row {
  std::string id, name;
  runtime::Stats s;
  double cpu_percent = 0, avg_cpu_percent = 0, mem_percent = 0;
};

std::string percent(double p) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", p);
  return b;
}

std::string cpu_time(uint64_t ms) {
  char b[48];
  if (ms < 1000) std::snprintf(b, sizeof b, "%llums", static_cast<unsigned long long>(ms));
  else std::snprintf(b, sizeof b, "%.3fs", ms / 1000.0);
  return b;
}

/// The window of the first sample's CPU %, ms (docker's first has one of about a second).
constexpr int64_t kFirstWindowMs = 500;

/// One sample of each sandbox; `prev` (id → cpu ms, wall ms) gives CPU % since the last one.
std::vector<Row> sample(const Globals& g, const StatsFlags& f, std::map<std::string, std::pair<uint64_t, uint64_t>>& prev) {
  auto eng = make_engine(g);
  std::vector<std::string> ids;
  if (f.refs.empty()) {
    for (const auto& i : eng.list({false, {}})) ids.push_back(i.state.id);
  } else {
    for (const auto& r : f.refs) ids.push_back(eng.resolve(r));
  }
  std::vector<Row> rows;
  for (const auto& id : ids) {
    Row r;
    r.id = id;
    try {
      auto info = eng.inspect(id);
      r.name = info.state.name;
      if (info.status != "running") {
        if (!f.refs.empty()) throw Error(ErrorKind::Conflict,
                    "sandbox " + id.substr(0, 12) + " is not running (" + info.status + ")");
        continue;
      }
      r.s = eng.stats(id);
    } catch (const Error&) {
      if (!f.refs.empty()) throw;
      continue;  // ended or removed meanwhile
    }
    const auto& u = r.s.usage;
    if (u.duration_ms) r.avg_cpu_percent = 100.0 * static_cast<double>(u.cpu_ms) / static_cast<double>(u.duration_ms);
    auto it = prev.find(id);
    if (it != prev.end() && u.duration_ms > it->second.second)
      r.cpu_percent = 100.0 * static_cast<double>(u.cpu_ms - std::min(u.cpu_ms, it->second.first)) /
                      static_cast<double>(u.duration_ms - it->second.second);
    else
      r.cpu_percent = r.avg_cpu_percent;  // a sandbox new since the last sample: since its start
    prev[id] = {u.cpu_ms, u.duration_ms};
    if (r.s.memory_limit_bytes)
      r.mem_percent = 100.0 * static_cast<double>(r.s.memory_bytes) / static_cast<double>(r.s.memory_limit_bytes);
    rows.push_back(std::move(r));
  }
  return rows;
}

json rows_json(const std::vector<Row>& rows) {
  json arr = json::array();
  for (const auto& r : rows)
    arr.push_back({{"id", r.id},
                   {"name", r.name},
                   {"cpu_percent", r.cpu_percent},
                   {"avg_cpu_percent", r.avg_cpu_percent},
                   {"cpu_time_ms", r.s.usage.cpu_ms},
                   {"mem_usage_bytes", r.s.memory_bytes},
                   {"mem_limit_bytes", r.s.memory_limit_bytes},
                   {"mem_percent", r.mem_percent},
                   {"max_rss_bytes", r.s.usage.max_rss_bytes},
                   // (null: not counted — --network none or host)
                   {"net_rx_bytes", r.s.net_rx_bytes ? json(*r.s.net_rx_bytes) : json(nullptr)},
                   {"net_tx_bytes", r.s.net_tx_bytes ? json(*r.s.net_tx_bytes) : json(nullptr)},
                   {"block_read_bytes", r.s.usage.io_read_bytes},
                   {"block_write_bytes", r.s.usage.io_write_bytes},
                   {"pids", r.s.pids},
                   {"pids_limit", r.s.pids_limit},
                   {"oom_kills", r.s.oom_kills},
                   {"duration_ms", r.s.usage.duration_ms}});
  return arr;
}

void print_table(const std::vector<Row>& rows, bool no_trunc) {
  std::printf("%-12s  %-16s  %-8s  %-22s  %-8s  %-13s  %-22s  %-5s  %-10s  %s\n", "ID", "NAME", "CPU %",
              "MEM USAGE / LIMIT", "MEM %", "NET IO", "BLOCK IO", "PIDS", "CPU TIME", "AVG CPU %");
  for (const auto& r : rows) {
    std::string mem = units::format_size(r.s.memory_bytes) + " / " +
                      (r.s.memory_limit_bytes ? units::format_size(r.s.memory_limit_bytes) : std::string("--"));
    std::string blk = units::format_size_si(r.s.usage.io_read_bytes) + " / " + units::format_size_si(r.s.usage.io_write_bytes);
    std::string net = r.s.net_rx_bytes ? units::format_size_si(*r.s.net_rx_bytes) + " / " +
                                             units::format_size_si(r.s.net_tx_bytes.value_or(0))
                                       : std::string("-- / --");
    std::printf("%-12s  %-16s  %-8s  %-22s  %-8s  %-13s  %-22s  %-5llu  %-10s  %s\n",
                (no_trunc ? r.id : r.id.substr(0, 12)).c_str(), r.name.c_str(), percent(r.cpu_percent).c_str(),
                mem.c_str(), percent(r.mem_percent).c_str(), net.c_str(), blk.c_str(),
                static_cast<unsigned long long>(r.s.pids), cpu_time(r.s.usage.cpu_ms).c_str(),
                percent(r.avg_cpu_percent).c_str());
  }
}

int stats(const Globals& g, const StatsFlags& f) {
  if (f.interval <= 0) throw Error(ErrorKind::InvalidArgument, "invalid --interval: must be above 0 seconds");
  std::map<std::string, std::pair<uint64_t, uint64_t>> prev;
  const bool tty = ::isatty(1);
  // The first sample's CPU % covers a short window, as docker's does (its
  // first read has a previous one a second before): since the start it would
  // count the runtime's own start-up (runsc boots its kernel: an idle gVisor
  // sandbox showed 98%), which AVG CPU % already reports.
  sample(g, f, prev);
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(kFirstWindowMs, static_cast<int64_t>(f.interval * 1000))));
  for (;;) {
    auto rows = sample(g, f, prev);
    if (f.json) {
      // --no-stream: one JSON document; streaming: JSON Lines, one sample
      // (an array of the sandboxes' rows) per line, as a reader can split them.
      std::cout << rows_json(rows).dump(f.no_stream ? 2 : -1) << std::endl;
    } else {
      if (tty && !f.no_stream) std::printf("\033[2J\033[H");  // redraw in place, as podman
      print_table(rows, f.no_trunc);
      std::fflush(stdout);
    }
    if (f.no_stream) return 0;
    if (!f.refs.empty() && rows.empty()) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(f.interval * 1000)));
  }
}

}  // namespace

void register_stats_command(CLI::App& app, Globals& g, Action& action) {
  auto f = std::make_shared<StatsFlags>();
  CLI::App* cmd = app.add_subcommand("stats", "Show live resource usage of running sandboxes (cpu, memory, network and block I/O, pids)");
  cmd->footer(
      "Columns (podman's): CPU % since the last sample (the first: over 0.5 s), MEM USAGE / LIMIT (memory\n"
      "cgroup, incl. page cache), NET IO received / sent (--network private: its veth; none and host: -- / --),\n"
      "BLOCK IO read / written, PIDS, CPU TIME (user+system), AVG CPU % since the start. The end-of-life numbers of every sandbox\n"
      "are in 'sbx inspect' (State.CpuMs, MaxRssBytes, …) and 'sbx run --end-record'.");
  cmd->add_option("SANDBOX", f->refs, "Sandboxes (id, prefix or name; default: every running one)");
  cmd->add_flag("--no-stream", f->no_stream, "Print one sample and exit");
  cmd->add_flag("--json", f->json, "Print JSON: with --no-stream one array; streaming, JSON Lines (an array per sample per line)");
  cmd->add_flag("--no-trunc", f->no_trunc, "Print full ids");
  cmd->add_flag("-a,--all", f->all, "Accepted for podman compatibility (only running sandboxes have live usage)");
  cmd->add_option("-i,--interval", f->interval, "Seconds between samples when streaming")->capture_default_str();
  cmd->callback([f, &g, &action] { action = [f, &g] { return stats(g, *f); }; });
}

}  // namespace sbx::cli
