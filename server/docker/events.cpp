// Docker Engine API endpoints around a container's life (server/docker/api.h):
// GET /events, POST /containers/{id}/restart|pause|unpause,
// GET /containers/{id}/top and /stats.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "runtime/state.h"
#include "server/docker/api.h"

namespace sbx::server {

using nlohmann::json;

namespace {

constexpr size_t kEventsKept = 1000;

/// Docker's filters parameter, values of `key` only ({"type": {"container": true}} or lists).
std::vector<std::string> filter_values(const std::string& text, const std::string& key) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  json f = json::parse(text);
  if (!f.is_object()) throw HttpError{400, "invalid filters: expected a JSON object"};
  auto it = f.find(key);
  if (it == f.end()) return out;
  if (it->is_array()) {
    for (const auto& e : *it)
      if (e.is_string()) out.push_back(e.get<std::string>());
  } else if (it->is_object()) {
    for (const auto& [v, on] : it->items())
      if (!on.is_boolean() || on.get<bool>()) out.push_back(v);
  }
  return out;
}

bool any_of(const std::vector<std::string>& want, const std::string& v) {
  if (want.empty()) return true;
  for (const auto& w : want)
    if (w == v) return true;
  return false;
}

/// True once the client closed its side of the connection (or it failed).
bool client_gone(int fd) {
  struct pollfd p {fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) return true;
  char b;
  return ::recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/// Unix seconds in a Docker time parameter ("1700000000", "1700000000.5"); `def` when empty.
double parse_time(const std::string& s, double def) {
  if (s.empty()) return def;
  try {
    return std::stod(s);
  } catch (const std::exception&) {
    throw HttpError{400, "invalid time '" + s + "': give unix seconds"};
  }
}

/// The host's CPU time over all CPUs, ns (/proc/stat's "cpu" line): Docker's system_cpu_usage.
uint64_t system_cpu_ns() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  f >> cpu;
  uint64_t sum = 0, v = 0;
  for (int i = 0; i < 7 && (f >> v); ++i) sum += v;  // user … softirq, as dockerd sums them
  return sum * (1000000000ULL / static_cast<uint64_t>(::sysconf(_SC_CLK_TCK)));
}

}  // namespace

void Api::emit(const std::string& action, const std::string& id, std::map<std::string, std::string> attrs) {
  auto ctr = record(id);
  if (ctr) {
    attrs["image"] = ctr->config.value("Image", "");
    attrs["name"] = ctr->name.empty() ? id.substr(0, 12) : ctr->name;
    if (auto l = ctr->config.find("Labels"); l != ctr->config.end() && l->is_object())
      for (const auto& [k, v] : l->items())
        if (v.is_string() && !attrs.count(k)) attrs[k] = v.get<std::string>();
  }
  emit_object("container", action, id, std::move(attrs));
}

void Api::emit_object(const std::string& type, const std::string& action, const std::string& id,
                      std::map<std::string, std::string> attrs) {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  const bool container = type == "container";
  if (container) attrs.try_emplace("image", "");  // (always among a container event's attributes)
  json ev = {{"Type", type},
             {"Action", action},
             {"Actor", {{"ID", id}, {"Attributes", attrs}}},
             {"scope", "local"},
             {"time", ns / 1000000000},
             {"timeNano", ns}};
  // (the fields of the API before 1.22, which docker still sends on
  // container events only)
  if (container) {
    ev["status"] = action;
    ev["id"] = id;
    ev["from"] = attrs.at("image");
  }
  {
    std::lock_guard lk(mu_);
    events_.push_back(std::move(ev));
    if (events_.size() > kEventsKept) events_.pop_front();
    ++event_seq_;
  }
  cv_.notify_all();
}

void Api::events(Connection& c, const Request& r) {
  std::string ftext = r.param("filters");
  auto types = filter_values(ftext, "type");
  auto actions = filter_values(ftext, "event");
  auto containers = filter_values(ftext, "container");
  auto networks = filter_values(ftext, "network");
  auto volumes = filter_values(ftext, "volume");
  double now_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  double since = parse_time(r.param("since"), now_s);
  std::string until_text = r.param("until");
  double until = parse_time(until_text, 0);
  auto wanted = [&](const json& ev) {
    std::string type = ev.value("Type", "container");
    if (!any_of(types, type)) return false;
    const json& at = ev["Actor"]["Attributes"];
    std::string id = ev["Actor"].value("ID", ""), name = at.value("name", "");
    // container=: its own events and the network events naming it (as docker);
    // network= / volume=: the events of that network or volume.
    std::string ctr_id = type == "container" ? id : at.value("container", "");
    auto match = [](const std::vector<std::string>& want, const std::string& i, const std::string& n) {
      if (want.empty()) return true;
      for (const auto& w : want)
        if ((!i.empty() && i.rfind(w, 0) == 0) || (!n.empty() && n == w)) return true;
      return false;
    };
    bool by_obj = match(containers, ctr_id, type == "container" ? name : "") &&
                  match(networks, type == "network" ? id : "", type == "network" ? name : "") &&
                  match(volumes, type == "volume" ? id : "", "");
    double t = ev["timeNano"].get<int64_t>() / 1e9;
    return by_obj && any_of(actions, ev["Action"]) && t >= since && (until_text.empty() || t <= until);
  };
  if (!c.begin_chunks(200, "application/json")) return;
  // Kept events from `since` on first, then new ones as they come.
  std::unique_lock lk(mu_);
  uint64_t seen = event_seq_ - events_.size();
  for (;;) {
    std::vector<json> out;
    size_t first = static_cast<size_t>(seen - (event_seq_ - events_.size()));
    for (size_t i = first; i < events_.size(); ++i)
      if (wanted(events_[i])) out.push_back(events_[i]);
    seen = event_seq_;
    lk.unlock();
    for (const auto& ev : out)
      if (!c.chunk(ev.dump() + "\n")) return c.set_close();
    double t = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (!until_text.empty() && t >= until) break;
    if (client_gone(c.fd())) return c.set_close();
    lk.lock();
    cv_.wait_for(lk, std::chrono::seconds(1), [&] { return event_seq_ != seen; });
    if (seen < event_seq_ - events_.size()) seen = event_seq_ - events_.size();  // (a slow reader lost some)
  }
  c.end_chunks();
}

void Api::container_restart(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  auto ctr = record(id);
  if (!ctr) throw HttpError{409, "container " + id.substr(0, 12) + " was made by sbx create: sbx serve cannot restart it"};
  bool running;
  {
    std::lock_guard lk(mu_);
    running = ctr->started && !ctr->ended;
  }
  if (running) {
    std::string t = r.param("t");
    int secs = t.empty() ? 10 : std::stoi(t);
    thaw_for_signal(ctr, id);
    try {
      engine_.stop(id, std::chrono::seconds(std::max(secs, 0)));
    } catch (const Error& e) {
      log::debug("serve: restart " + id.substr(0, 12) + ": stop: " + e.what());
    }
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return ctr->ended || ctr->removed; });
  }
  {
    std::lock_guard lk(mu_);
    if (ctr->removed) throw HttpError{404, "No such container: " + id + " (removed when it ended: AutoRemove)"};
    bool was = ctr->started;
    ctr->started = true;
    ctr->restarts += was;
  }
  rerun(ctr);
  launch(ctr, true);
  emit("start", id);
  emit("restart", id);
  c.send(204, "");
}

void Api::container_pause(Connection& c, const Request&, const std::string& ref, bool pause) {
  std::string id = resolve_container(ref);
  auto ctr = record(id);
  if (engine_.inspect(id).status != "running") throw HttpError{409, "Container " + id + " is not running"};
  {
    std::lock_guard lk(mu_);
    if (ctr && ctr->paused == pause)
      throw HttpError{409, "Container " + id + (pause ? " is already paused" : " is not paused")};
  }
  if (pause) engine_.pause(id);
  else engine_.unpause(id);
  if (ctr) {
    std::lock_guard lk(mu_);
    ctr->paused = pause;
  }
  emit(pause ? "pause" : "unpause", id);
  c.send(204, "");
}

void Api::container_top(Connection& c, const Request&, const std::string& ref) {
  std::string id = resolve_container(ref);
  auto info = engine_.inspect(id);
  if (info.status != "running") throw HttpError{409, "Container " + id + " is not running"};
  // The backend's view: host pids and uids (native, as `docker top` shows
  // them), or the processes gVisor's own kernel runs (runsc ps).
  runtime::ProcessTable t = engine_.processes(id);
  json procs = json::array();
  for (const auto& row : t.rows) procs.push_back(row);
  c.send(200, json{{"Titles", t.titles}, {"Processes", procs}}.dump());
}

void Api::container_stats(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  auto ctr = record(id);
  std::string name = "/" + (ctr && !ctr->name.empty() ? ctr->name : id.substr(0, 12));
  long ncpu = ::sysconf(_SC_NPROCESSORS_ONLN);
  auto sample = [&]() -> json {
    runtime::Stats s = engine_.stats(id);
    return {{"cpu_usage", {{"total_usage", s.cpu_ns}, {"percpu_usage", json::array()}}},
            {"system_cpu_usage", system_cpu_ns()},
            {"online_cpus", ncpu},
            {"throttling_data", {{"periods", 0}, {"throttled_periods", 0}, {"throttled_time", 0}}},
            {"_mem", s.memory_bytes},
            {"_memlimit", s.memory_limit_bytes},
            {"_pids", s.pids},
            {"_pidslimit", s.pids_limit},
            {"_read", s.usage.io_read_bytes},
            {"_write", s.usage.io_write_bytes}};
  };
  auto body = [&](json pre, json cur) {
    auto now = std::chrono::system_clock::now().time_since_epoch();
    json out = {
        {"id", id},
        {"name", name},
        {"read", rfc3339(std::chrono::duration_cast<std::chrono::milliseconds>(now).count())},
        {"preread", rfc3339(0)},
        {"pids_stats", {{"current", cur["_pids"]}}},
        {"memory_stats",
         {{"usage", cur["_mem"]},
          {"limit", cur["_memlimit"].get<uint64_t>() ? cur["_memlimit"].get<uint64_t>()
                                                     : static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                                                           static_cast<uint64_t>(::sysconf(_SC_PAGE_SIZE))},
          {"stats", json::object()}}},
        {"blkio_stats",
         {{"io_service_bytes_recursive",
           json::array({{{"major", 0}, {"minor", 0}, {"op", "read"}, {"value", cur["_read"]}},
                        {{"major", 0}, {"minor", 0}, {"op", "write"}, {"value", cur["_write"]}}})}}},
        {"networks", json::object()}};
    if (cur["_pidslimit"].get<uint64_t>()) out["pids_stats"]["limit"] = cur["_pidslimit"];
    for (auto* j : {&pre, &cur})
      for (const char* k : {"_mem", "_memlimit", "_pids", "_pidslimit", "_read", "_write"}) j->erase(k);
    out["cpu_stats"] = cur;
    out["precpu_stats"] = pre;
    return out;
  };
  json empty_pre = {{"cpu_usage", {{"total_usage", 0}}}, {"system_cpu_usage", 0}, {"online_cpus", ncpu}};
  bool stream = r.flag("stream", true);
  if (!stream) {
    if (r.flag("one-shot")) return (void)c.send(200, body(empty_pre, sample()).dump());
    // As dockerd: two samples apart, so that the client can compute CPU %.
    json pre = sample();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return (void)c.send(200, body(pre, sample()).dump());
  }
  if (!c.begin_chunks(200, "application/json")) return;
  json pre = empty_pre;
  for (;;) {
    json cur;
    try {
      cur = sample();
    } catch (const Error&) {
      break;  // it ended and is gone
    }
    json keep = cur;
    if (!c.chunk(body(pre, cur).dump() + "\n")) return c.set_close();
    for (const char* k : {"_mem", "_memlimit", "_pids", "_pidslimit", "_read", "_write"}) keep.erase(k);
    pre = keep;
    if (engine_.inspect(id).status != "running") break;
    for (int i = 0; i < 10; ++i) {
      if (client_gone(c.fd())) return c.set_close();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  c.end_chunks();
}

}  // namespace sbx::server
