// /sbx/v1 snapshots (server/v1/sbx_v1.h, docs/api.md "Snapshots"): a sandbox's
// file system as an image, one directory as a directory snapshot (mountable
// into another sandbox through create's "snapshots"), a memory checkpoint,
// and restore of a checkpoint as N independent sandboxes (fork).
#include <thread>

#include "common/error.h"
#include "server/v1/sbx_v1.h"
#include "server/reaper.h"

namespace sbx::server {

using nlohmann::json;

namespace {

json record_json(const snapshot::SnapshotRecord& s) {
  return {{"name", s.name},   {"kind", s.kind},       {"id", s.id},         {"size", s.size},
          {"parent", s.parent}, {"runtime", s.runtime}, {"source", s.source}, {"created", s.created}};
}

json body_of(const Request& r) {
  json b = json::parse(r.body.empty() ? "{}" : r.body);
  if (!b.is_object()) throw V1Error{400, "InvalidArgument", "the body must be a JSON object"};
  return b;
}

}  // namespace

void SbxV1::snapshot_fs(Connection& c, const Request& r, const std::string& id) {
  json b = body_of(r);
  engine::FsSnapshotRequest req;
  req.sandbox = id;
  req.name = b.value("name", "");
  auto res = engine_.snapshot_fs(req);
  std::string ref = res.image.names.empty() ? res.image.id : res.image.names.front();
  c.send(201, json{{"image", ref}, {"id", res.image.id}}.dump());
}

void SbxV1::snapshot_dir(Connection& c, const Request& r, const std::string& id) {
  json b = body_of(r);
  engine::DirSnapshotRequest req;
  req.sandbox = id;
  req.path = b.value("path", "");
  if (req.path.empty() || req.path[0] != '/') throw V1Error{400, "InvalidArgument", "path must be absolute"};
  req.name = b.value("name", "");
  c.send(201, record_json(engine_.snapshot_dir(req)).dump());
}

void SbxV1::checkpoint(Connection& c, const Request& r, const std::string& id) {
  json b = body_of(r);
  engine::CheckpointRequest req;
  req.sandbox = id;
  req.name = b.value("name", "");
  req.leave_running = b.value("leave_running", true);
  c.send(201, record_json(engine_.checkpoint(req)).dump());
}

void SbxV1::restore(Connection& c, const Request& r, const std::string& name) {
  engine::RestoreRequest req;
  req.snapshot = name;
  req.name = r.param("name");
  std::string n = r.param("count");
  try {
    req.count = n.empty() ? 1 : std::stoi(n);
  } catch (...) {
    req.count = 0;
  }
  if (req.count < 1 || req.count > 1000) throw V1Error{400, "InvalidArgument", "count must be 1 to 1000"};
  auto restored = engine_.restore(req);
  json out = json::array();
  for (const auto& s : restored) {
    std::string id = s.id;
    runtime::SandboxState created;  // its state as the restore left it (engine reap)
    try {
      created = engine_.inspect(id).state;
    } catch (const Error&) {
      created.id = id;  // (removed meanwhile: its monitor is still ours to reap)
      created.pid = s.pid;
    }
    on_sandbox_end(created, [this, id, created] { watch(id, created); });
    out.push_back(sandbox_json(id));
  }
  c.send(201, out.dump());
}

void SbxV1::snapshot_list(Connection& c) {
  json out = json::array();
  for (const auto& s : engine_.list_snapshots()) out.push_back(record_json(s));
  c.send(200, out.dump());
}

void SbxV1::snapshot_remove(Connection& c, const std::string& name) {
  engine_.remove_snapshot(name);
  c.send(204, "");
}

}  // namespace sbx::server
