// Engine: sandboxes from a trajectory — `sbx branch` (the files as of a step)
// and the fresh sandbox `sbx replay` re-runs the steps in.
#include <stdlib.h>

#include <filesystem>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/text.h"
#include "engine/trajectory_ops.h"
#include "engine/recording.h"
#include "engine/sandbox_options.h"
#include "engine/trajectory.h"
#include "oci/digest.h"
#include "runtime/backends.h"
#include "runtime/linux/time_namespace.h"
#include "spec/spec_json.h"

namespace sbx::engine::trajectory {

using json = nlohmann::json;

std::string dir_of_sandbox(Engine& engine, const std::string& ref) {
  std::string id = engine.resolve(ref);
  const std::string& run_root = engine.config().run_root;
  if (!recorded(run_root, id))
    throw Error(ErrorKind::Conflict, "sandbox " + ref + " records no trajectory (create it with 'sbx create --record')");
  return dir_of(run_root, id);
}

std::string create_recorded(Engine& engine, SandboxRequest req, const std::vector<std::string>& redact,
                            const json& parent) {
  if (req.spec.id.empty()) req.spec.id = runtime::new_sandbox_id();
  pin_reproducible(req.spec);
  json header = make_header(req.spec, redact);
  if (!parent.is_null()) header["parent"] = parent;
  std::string id = engine.create(req);
  try {
    std::string tdir = dir_of(engine.config().run_root, id);
    fs::mkdir_p(tdir + "/objects", 0700);
    append_line(tdir + "/trajectory.jsonl", header);
  } catch (...) {
    try {
      engine.remove(id, true);
    } catch (const Error&) {
    }
    throw;
  }
  return id;
}

std::string create_labelled(Engine& engine, const SandboxRequest& req) {
  const auto& labels = req.spec.labels;
  auto rec = labels.find(kRecordLabel);
  auto red = labels.find(kRedactLabel);
  std::string v = rec == labels.end() ? "" : rec->second;
  bool record = v == "1" || v == "true";
  if (!record && !v.empty() && v != "0" && v != "false")
    throw Error(ErrorKind::InvalidArgument,
                std::string("label ") + kRecordLabel + "=" + v + ": give 1 or true to record the sandbox, 0 or false not to");
  if (!record && red != labels.end())
    throw Error(ErrorKind::InvalidArgument,
                std::string("label ") + kRedactLabel + " needs " + kRecordLabel + "=1 (it only applies to recorded sandboxes)");
  if (!record) return engine.create(req);
  std::vector<std::string> redact;
  if (red != labels.end())
    for (const auto& r : split(red->second, ','))
      if (!r.empty()) redact.push_back(r);
  return create_recorded(engine, req, redact);
}

std::string create_from(Engine& engine, const json& header, const std::string& image, const std::string& name,
                        bool record, const json& parent) {
  if (header.contains("spec") && header["spec"].is_null()) {
    // An imported trajectory (mini-swe-agent): a plain sandbox of --image.
    if (image.empty()) throw Error("this trajectory was imported and names no image: give one with --image");
    SandboxOptions o;
    o.image = image;
    o.name = name;
    o.pull = oci::PullPolicy::Never;
    o.hold_without_command = true;
    SandboxRequest req = build_sandbox(engine, o);
    pin_reproducible(req.spec);
    return engine.create(req);
  }
  if (!header.contains("spec") || !header["spec"].is_object()) throw Error("the trajectory's header has no sandbox spec");
  json s = header["spec"];
  std::string id = runtime::new_sandbox_id();
  s["id"] = id;
  s["name"] = name;
  s["upper_dir"] = "";
  std::string ref = image;
  if (ref.empty()) {
    const json& im = header.value("image", json::object());
    ref = im.value("id", "");
    if (ref.empty()) ref = im.value("ref", "");
  }
  if (ref.empty()) throw Error("the trajectory names no image: give one with --image");
  oci::ImageRecord img;
  try {
    img = engine.resolve_or_pull(ref, oci::PullPolicy::Never, false, {});
  } catch (const Error& e) {
    std::string recorded_ref = header.value("image", json::object()).value("ref", "");
    throw Error("image " + ref + (recorded_ref.empty() || recorded_ref == ref ? "" : " (" + recorded_ref + ")") +
                " of the trajectory is not in this store: pull or import it, or give --image (" + e.what() + ")");
  }
  s["layer_dirs"] = engine.layer_dirs(img);
  SandboxSpec spec;
  try {
    s.erase("redacted_env");
    spec = spec::spec_from_json(s);
  } catch (const std::exception& e) {
    throw Error("the trajectory's sandbox spec is not readable: " + std::string(e.what()));
  }
  spec.image_id = img.id;
  if (!image.empty()) spec.image_ref = image;
  // A trajectory from before time namespaces ran with the host's clocks: so
  // does its replay (a newer one's spec holds the annotation as recorded).
  if (!header.contains("timens")) spec.annotations.emplace(runtime::kTimeNamespaceAnnotation, "false");
  for (const auto& r : header["spec"].value("redacted_env", json::array()))
    log::warn("env " + r.value("name", "") + " was recorded as a digest only: the new sandbox does not have it");
  SandboxRequest req;
  req.spec = spec;
  if (!record) return engine.create(req);
  return create_recorded(engine, req, header.value("redact", std::vector<std::string>{}), parent);
}

Trajectory read(Engine& engine, const std::string& source, const std::string& scratch, std::string* file) {
  if (source.empty()) throw Error("give a recorded sandbox or a trajectory file");
  if (fs::exists(source)) {
    auto t = load(source, scratch);
    if (file) *file = fs::exists(scratch + "/trajectory.jsonl") ? scratch + "/trajectory.jsonl" : source;
    return t;
  }
  std::string tdir;
  try {
    tdir = dir_of_sandbox(engine, source);
  } catch (const Error& e) {
    if (source.find('/') != std::string::npos) throw Error("no such trajectory file: " + source);
    throw Error(e, std::string(e.what()) + " (nor is it a trajectory file)");
  }
  std::string f = tdir + "/trajectory.jsonl";
  auto t = parse(fs::read_file(f), f);
  t.objects_dir = tdir + "/objects";
  if (file) *file = f;
  return t;
}

std::vector<std::string> branch(Engine& engine, const BranchRequest& req) {
  const std::string& run_root = engine.config().run_root;
  if (req.count < 1 || req.count > 1024) throw Error(ErrorKind::InvalidArgument, "--count must be 1..1024, not " + std::to_string(req.count));
  ScratchDir scratch(run_root);
  std::string text_file;
  Trajectory t = read(engine, req.source, scratch.path + "/src", &text_file);
  std::string parent_name =
      fs::exists(req.source) ? std::filesystem::absolute(req.source).string() : engine.resolve(req.source);
  auto state = files_at(t, req.at);
  std::string files = scratch.path + "/files";
  auto to_delete = materialize(state, t.objects_dir, files);
  json parent = {{"trajectory", parent_name},
                 {"sha256", oci::sha256_file_hex(text_file)},
                 {"at", req.at}};
  std::vector<std::string> made;
  try {
    for (int i = 0; i < req.count; ++i) {
      std::string name = req.name.empty() ? "" : req.count == 1 ? req.name : req.name + "-" + std::to_string(i + 1);
      std::string id = create_from(engine, t.header, "", name, true, parent);
      made.push_back(id);
      if (req.on_created) req.on_created(id);
      auto sb = runtime::open_sandbox(run_root, id);
      runtime::BackendOptions bo;
      bo.run_root = run_root;
      auto backend = runtime::backend_for(sb.state, bo);
      if (!to_delete.empty()) {
        runtime::ExecRequest rm;
        rm.args = {"rm", "-rf", "--"};
        for (const auto& p : to_delete) rm.args.push_back(p);
        rm.forward_signals = false;
        Fd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
        rm.stdout_fd = rm.stderr_fd = null.fd;
        int code = backend->exec(sb, rm);
        if (code != 0) throw Error("branch " + id + ": could not remove the files step " + std::to_string(req.at) +
                                   " deleted (rm exited " + std::to_string(code) + ")");
      }
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(files, ec)) backend->copy_in(sb, e.path().string(), "/");
      // The branch's own first step: the files it starts with, as a
      // checkpoint of its own (so it can be branched in turn without its parent).
      if (auto rec = recorder_for(run_root, id))
        rec->append({{"kind", "branch"}, {"parent", parent}}, true);
    }
  } catch (...) {
    for (const auto& id : made) {
      try {
        engine.remove(id, true);
      } catch (const Error&) {
      }
    }
    throw;
  }
  return made;
}

}  // namespace sbx::engine::trajectory
