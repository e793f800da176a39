// /sbx/v1 trajectories (server/v1/sbx_v1.h, docs/api.md "Trajectories"): a
// recorded sandbox's trajectory as JSON lines, a branch from one of its
// steps, a replay of it (trajectory FILES: trajectory_files.cpp). Each
// translates its request into the engine's (engine/trajectory_ops.h) and
// serializes the answer; the engine decides.

#include <climits>
#include <functional>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/json_number.h"
#include "engine/trajectory_ops.h"
#include "server/v1/sbx_v1.h"
#include "server/reaper.h"
#include "server/v1/trajectory_files.h"

namespace sbx::server {

using nlohmann::json;

namespace {

json body_object(const Request& r) {
  json b = json::parse(r.body.empty() ? "{}" : r.body);
  if (!b.is_object()) throw V1Error{400, "InvalidArgument", "the body must be a JSON object"};
  return b;
}

/// An optional integer field: `def` when absent or null; 400 when not an integer.
int int_field(const json& b, const char* key, int def) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return def;
  auto n = json_number::to_int64(*it);
  if (!n || *n < INT_MIN || *n > INT_MAX)
    throw V1Error{400, "InvalidArgument", std::string(key) + " must be an integer (32-bit)"};
  return static_cast<int>(*n);
}

std::string string_field(const json& b, const char* key) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return "";
  if (!it->is_string()) throw V1Error{400, "InvalidArgument", std::string(key) + " must be a string"};
  return it->get<std::string>();
}

bool bool_field(const json& b, const char* key) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw V1Error{400, "InvalidArgument", std::string(key) + " must be true or false"};
  return it->get<bool>();
}

json replay_step_json(const engine::trajectory::ReplayStep& s) {
  return {{"step", s.step},          {"kind", s.kind}, {"what", s.what}, {"result", s.result},
          {"difference", s.difference}, {"note", s.note}};
}

}  // namespace

json replay_json(const engine::trajectory::ReplayResult& res, const std::function<json(const std::string&)>& sandbox) {
  json steps = json::array();
  for (const auto& s : res.steps) steps.push_back(replay_step_json(s));
  json out = {{"matched", res.first_divergence == 0},
              {"first_divergence", res.first_divergence == 0 ? json() : json(res.first_divergence)},
              {"steps", steps},
              {"sandbox", nullptr}};
  if (!res.sandbox.empty()) out["sandbox"] = sandbox(res.sandbox);
  return out;
}

void SbxV1::start_watch(const std::string& id) {
  // Its state as create left it: what of it is this server's child.
  runtime::SandboxState created;
  try {
    created = engine_.inspect(id).state;
  } catch (const Error&) {
    return;  // already gone: nothing to watch
  }
  on_sandbox_end(created, [this, id, created] { watch(id, created); });
}

void SbxV1::trajectory(Connection& c, const std::string& ref) {
  std::string id = resolve(ref);
  // The file as recorded: the header line, then one line per step.
  std::string file = engine::trajectory::dir_of_sandbox(engine_, id) + "/trajectory.jsonl";
  c.send(200, fs::read_file(file), "application/x-ndjson");
}

void SbxV1::branch(Connection& c, const Request& r, const std::string& ref) {
  json b = body_object(r);
  engine::trajectory::BranchRequest req;
  req.source = resolve(ref);
  req.at = int_field(b, "step", 0);
  if (req.at == 0) throw V1Error{400, "InvalidArgument", "step (the step to branch from, 1-based) is required"};
  req.count = int_field(b, "count", 1);
  req.name = string_field(b, "name");
  req.on_created = [this](const std::string& id) { start_watch(id); };
  json out = json::array();
  for (const auto& id : engine::trajectory::branch(engine_, req)) out.push_back(sandbox_json(id));
  // One branch (no "count"): the sandbox itself; with "count": the list.
  c.send(201, b.contains("count") && !b["count"].is_null() ? out.dump() : out.front().dump());
}

void SbxV1::replay(Connection& c, const Request& r, const std::string& ref) {
  json b = body_object(r);
  engine::trajectory::ReplayRequest req;
  req.source = resolve(ref);
  req.image = string_field(b, "image");
  req.until = int_field(b, "until", 0);
  req.keep = bool_field(b, "keep");
  req.tolerate_regex = v1_string_list(b.value("tolerate_regex", json()), "tolerate_regex");
  req.tolerate_path = v1_string_list(b.value("tolerate_path", json()), "tolerate_path");
  req.on_created = [this](const std::string& id) { start_watch(id); };
  auto res = engine::trajectory::replay(engine_, req);
  c.send(200, replay_json(res, [this](const std::string& id) { return sandbox_json(id); }).dump());
}

}  // namespace sbx::server
