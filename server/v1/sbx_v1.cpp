// /sbx/v1: routing, errors and the sandbox endpoints (server/v1/sbx_v1.h,
// docs/api.md): create, get, list, wait, terminate, stats.
#include "server/v1/sbx_v1.h"
#include "engine/trajectory_ops.h"
#include "server/v1/trajectory_files.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/snapshot_copies.h"
#include "runtime/state.h"
#include "engine/sandbox_options.h"
#include "server/error_status.h"
#include "server/framing.h"
#include "server/reaper.h"
#include "engine/list_status.h"

namespace sbx::server {

using nlohmann::json;

std::string v1_frame(FrameKind kind, std::string_view payload) {
  return prefixed_frame(static_cast<uint8_t>(kind), payload);
}

SbxV1& sbx_v1(const engine::Config& cfg, const std::string& default_runtime) {
  static SbxV1* api = new SbxV1(cfg, default_runtime);  // never freed: detached threads use it
  return *api;
}

namespace {

}  // namespace

V1Error classify(const Error& e) {
  V1Status s = v1_status(e);
  return {s.status, error_kind_name(s.kind), e.what()};
}

namespace {

void send_v1_error(Connection& c, const V1Error& e) {
  c.send(e.status, json{{"message", e.message}, {"kind", e.kind}}.dump());
}

}  // namespace

void SbxV1::handle(Connection& c, Request& r) {
  static const std::regex kSandbox("^/sbx/v1/sandboxes/([^/]+)$");
  static const std::regex kSandboxOp("^/sbx/v1/sandboxes/([^/]+)/([a-z_]+)$");
  static const std::regex kFileOp("^/sbx/v1/sandboxes/([^/]+)/files/([a-z]+)$");
  static const std::regex kSnapshot("^/sbx/v1/snapshots/([^/]+)$");
  static const std::regex kRestore("^/sbx/v1/snapshots/([^/]+)/restore$");
  static const std::regex kVolume("^/sbx/v1/volumes/([^/]+)$");
  static const std::regex kTrajectoryFile("^/sbx/v1/trajectories/(show|branch|replay)$");
  const std::string& p = r.path;
  const std::string& m = r.method;
  std::smatch g;
  try {
    if (p == "/sbx/v1/sandboxes" && m == "POST") return create(c, r);
    if (p == "/sbx/v1/sandboxes" && m == "GET") return list(c, r);
    if (p == "/sbx/v1/snapshots" && m == "GET") return snapshot_list(c);
    if (p == "/sbx/v1/build" && m == "POST") return build(c, r);
    if (p == "/sbx/v1/volumes" && m == "GET") return volume_list(c);
    if (p == "/sbx/v1/volumes" && m == "POST") return volume_create(c, r);
    if (std::regex_match(p, g, kVolume)) {
      if (m == "GET") return volume_get(c, g[1]);
      if (m == "DELETE") return volume_remove(c, r, g[1]);
    }
    if (p == "/sbx/v1/version" && m == "GET")
      return (void)c.send(200, json{{"version", SBX_VERSION}, {"api", "sbx/v1"}}.dump());
    if (std::regex_match(p, g, kSandbox)) {
      if (m == "GET") return get(c, g[1]);
      if (m == "DELETE") return terminate(c, r, g[1]);
    }
    if (std::regex_match(p, g, kSandboxOp)) {
      std::string id = g[1], op = g[2];
      if (m == "POST" && op == "wait") return wait(c, r, id);
      if (m == "POST" && op == "terminate") return terminate(c, r, id);
      if (m == "GET" && op == "stats") return stats(c, id);
      if (m == "POST" && op == "exec") return exec(c, r, id);
      if (m == "GET" && op == "files") return file_read(c, r, resolve(id));
      if ((m == "PUT" || m == "POST") && op == "files") return file_write(c, r, resolve(id));
      if (m == "POST" && op == "snapshot_filesystem") return snapshot_fs(c, r, resolve(id));
      if (m == "POST" && op == "snapshot_directory") return snapshot_dir(c, r, resolve(id));
      if (m == "POST" && op == "checkpoint") return checkpoint(c, r, resolve(id));
      if (m == "GET" && op == "trajectory") return trajectory(c, id);
      if (m == "POST" && op == "branch") return branch(c, r, id);
      if (m == "POST" && op == "replay") return replay(c, r, id);
    }
    if (std::regex_match(p, g, kTrajectoryFile) && m == "POST")
      return v1_trajectory_file(engine_, c, r, g[1], [this](const std::string& id) { start_watch(id); },
                                [this](const std::string& id) { return sandbox_json(id); });
    if (std::regex_match(p, g, kFileOp) && m == "POST") return file_op(c, r, resolve(g[1]), g[2]);
    if (std::regex_match(p, g, kRestore) && m == "POST") return restore(c, r, g[1]);
    if (std::regex_match(p, g, kSnapshot) && m == "DELETE") return snapshot_remove(c, g[1]);
    throw V1Error{404, "NotFound", "sbx serve has no " + m + " " + p + " (see docs/api.md)"};
  } catch (const V1Error& e) {
    send_v1_error(c, e);
  } catch (const HttpError& e) {
    send_v1_error(c, {e.status, e.status == 404 ? "NotFound" : "InvalidArgument", e.message});
  } catch (const Error& e) {
    send_v1_error(c, classify(e));
  } catch (const json::exception& e) {
    send_v1_error(c, {400, "InvalidArgument", std::string("malformed JSON: ") + e.what()});
  } catch (const std::exception& e) {
    send_v1_error(c, {500, "Internal", e.what()});
  }
}

void SbxV1::cancel_all() {
  std::lock_guard lk(mu_);
  for (int fd : cancel_fds_) (void)!::write(fd, "x", 1);
}

std::string SbxV1::resolve(const std::string& ref) {
  try {
    return engine_.resolve(ref);
  } catch (const Error& e) {
    throw V1Error{404, "SandboxNotFound", std::string("no such sandbox: ") + ref};
  }
}

json SbxV1::sandbox_json(const std::string& id) { return sandbox_json(engine_.inspect(id)); }

json SbxV1::sandbox_json(const runtime::SandboxInfo& i) {
  json j = {{"id", i.state.id},
            {"name", i.state.name},
            {"image", i.state.image_ref},
            {"runtime", i.state.runtime},
            {"status", i.status},
            {"labels", i.state.labels},
            {"command", i.state.command},
            {"created_ms", i.state.created_ms},
            {"started_ms", i.state.started_ms},
            {"timeout_ms", i.state.timeout_ms},
            {"idle_timeout_ms", i.state.idle_timeout_ms},
            {"end", nullptr}};
  if (i.end)
    j["end"] = {{"reason", i.end->reason},
                {"exit_code", i.end->exit_code},
                {"signal", i.end->signal},
                {"ended_ms", i.end->ended_ms},
                {"oom_kills", i.oom_kills}};
  return j;
}

void SbxV1::create(Connection& c, const Request& r) {
  json b = json::parse(r.body.empty() ? "{}" : r.body);
  if (!b.is_object()) throw V1Error{400, "InvalidArgument", "the body must be a JSON object"};
  std::string image = b.value("image", "");
  if (image.empty()) throw V1Error{400, "InvalidArgument", "image is required"};
  oci::ImageRecord img;
  try {
    img = engine_.resolve_or_pull(image, oci::PullPolicy::Never, false, {});
  } catch (const Error& e) {
    throw V1Error{404, "ImageNotFound", "no such image: " + image + " (sbx pull or sbx import it first)"};
  }
  engine::SandboxOptions o = v1_create_options(b);
  o.id = random_hex(64);
  engine::SandboxRequest req = engine::build_sandbox(o, engine::resolved(engine_, img, image), default_runtime_);
  bool record = false;
  if (auto rec = b.find("record"); rec != b.end() && !rec->is_null()) {
    if (!rec->is_boolean()) throw V1Error{400, "InvalidArgument", "record must be true or false"};
    record = rec->get<bool>();
  }
  std::vector<std::string> redact = v1_string_list(b.value("redact", json()), "redact");
  if (!redact.empty() && !record) throw V1Error{400, "InvalidArgument", "redact needs record: true"};
  const std::string id = req.spec.id;
  if (record)
    engine::trajectory::create_recorded(engine_, req, redact);
  else
    engine_.create(req);
  runtime::SandboxState created = engine_.inspect(id).state;
  on_sandbox_end(created, [this, id, created] { watch(id, created); });
  c.send(201, sandbox_json(id).dump());
}

namespace {
/// Removes RUN_ROOT/.snapshot-copies/<id> and the parent when it is empty.
void remove_copies(const std::string& run_root, const std::string& id) {
  std::string parent = run_root + "/" + runtime::kSnapshotCopiesDir;
  runtime::remove_snapshot_copies(parent + "/" + id);
  ::rmdir(parent.c_str());
}
}  // namespace

void SbxV1::watch(const std::string& id, const runtime::SandboxState& created) {
  wait_and_reap(engine_, id, created, "sbx/v1");
  remove_copies(engine_.config().run_root, id);
}

void SbxV1::get(Connection& c, const std::string& ref) { c.send(200, sandbox_json(resolve(ref)).dump()); }

void SbxV1::list(Connection& c, const Request& r) {
  engine::ListRequest lr;
  lr.all = r.flag("all", false);
  if (std::string l = r.param("labels"); !l.empty()) {
    json labels = json::parse(l);
    if (!labels.is_object()) throw V1Error{400, "InvalidArgument", "labels must be a JSON object"};
    for (const auto& [k, v] : labels.items())
      lr.filters.push_back("label=" + k + (v.is_string() ? "=" + v.get<std::string>() : ""));
  }
  if (std::string n = r.param("name"); !n.empty()) lr.filters.push_back("name=" + n);
  json out = json::array();
  // (Statuses only: no sandbox's usage is shown, and thousands may be listed.)
  for (const auto& i : engine::list_status(engine_, lr)) out.push_back(sandbox_json(i));
  c.send(200, out.dump());
}

void SbxV1::wait(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve(ref);
  std::string t = r.param("timeout");
  if (t.empty()) {
    engine_.wait(id);
  } else {
    double secs = 0;
    try {
      secs = std::stod(t);
    } catch (...) {
      throw V1Error{400, "InvalidArgument", "timeout must be a number of seconds"};
    }
    // The engine's wait with its time-out (0 would mean none: a time-out
    // under 1 ms only looks).
    auto ms = std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
    if (ms.count() > 0) engine_.wait(id, ms);
  }
  c.send(200, sandbox_json(id).dump());
}

void SbxV1::terminate(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve(ref);
  if (r.flag("keep", false)) {
    engine_.kill(id, 9);
    engine_.wait(id);
  } else {
    // Its anonymous volumes (its image's VOLUMEs) go with it: nothing else names them.
    engine_.remove(id, engine::RemoveRequest{true, true});
    remove_copies(engine_.config().run_root, id);
  }
  c.send(204, "");
}

void SbxV1::stats(Connection& c, const std::string& ref) {
  std::string id = resolve(ref);
  auto i = engine_.inspect(id);
  json j = {{"cpu_ms", i.usage.cpu_ms},
            {"memory_peak_bytes", i.usage.max_rss_bytes},
            {"wall_ms", i.usage.duration_ms},
            {"io_read_bytes", i.usage.io_read_bytes},
            {"io_write_bytes", i.usage.io_write_bytes},
            {"oom_kills", i.oom_kills},
            {"memory_bytes", 0},
            {"pids", 0}};
  if (i.status == "running") {
    try {
      auto s = engine_.stats(id);
      j["memory_bytes"] = s.memory_bytes;
      if (s.cpu_ns / 1000000 > i.usage.cpu_ms) j["cpu_ms"] = s.cpu_ns / 1000000;
      j["pids"] = s.pids;
    } catch (const Error&) {
      // ended meanwhile: the usage above stands
    }
  }
  c.send(200, j.dump());
}

}  // namespace sbx::server
