// Engine: sandboxes — run, create, exec, cp, ps, inspect, logs, wait, stop,
// kill, stats, rm. Each resolves the sandbox (id, unique prefix or name:
// runtime/state.h) and hands it to its backend (runtime/backends.h).
#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "engine/engine.h"
#include "engine/list_status.h"
#include "engine/volume_holds.h"
#include "gpu/cdi.h"
#include "gpu/nvidia.h"
#include "runtime/backends.h"
#include "runtime/lifecycle.h"
#include "runtime/linux/signals.h"
#include "runtime/snapshot_copies.h"
#include "snapshot/dir_snapshot.h"
#include "engine/recording.h"
#include "engine/trajectory.h"
#include "oci/digest.h"
#include <filesystem>

namespace sbx::engine {

namespace {

/// Private copies of directory snapshots for one run, under
/// RUN_ROOT/.snapshot-copies/<id>/<n>; all removed when the run ends.
/// ('sbx gc' removes those of runs that were killed.)
class SnapshotCopies {
 public:
  SnapshotCopies(const std::string& run_root, const std::string& id)
      : run_root_(run_root), id_(id), base_(run_root + "/" + runtime::kSnapshotCopiesDir + "/" + id) {}
  ~SnapshotCopies() {
    if (used_ && !kept_) runtime::remove_sandbox_snapshot_copies(run_root_, id_);
  }
  /// The sandbox lives on: its copies stay.
  void keep() { kept_ = true; }
  SnapshotCopies(const SnapshotCopies&) = delete;
  SnapshotCopies& operator=(const SnapshotCopies&) = delete;
  std::string dir(size_t i) {
    used_ = true;
    fs::mkdir_p(base_, 0700);
    return base_ + "/" + std::to_string(i);
  }

 private:
  std::string run_root_, id_, base_;
  bool used_ = false, kept_ = false;
};

/// Named volumes to attach: the spec's volume mounts, or its image's VOLUMEs
/// (anonymous volumes, engine/volume_holds.h; the annotation the spec
/// carries, else its image's config).
bool has_volume_mounts(const std::string& root, const SandboxSpec& spec) {
  if (std::any_of(spec.mounts.begin(), spec.mounts.end(),
                  [](const spec::Mount& m) { return m.type == kVolumeMountType; }))
    return true;
  auto carried = carried_image_volumes(spec);
  return carried ? !carried->empty() : !image_volumes(root, spec.image_id).empty();
}

// label=k[=v] | name=N | status=S | id=PREFIX
bool matches(const runtime::SandboxInfo& i, const std::vector<std::string>& filters) {
  for (const auto& f : filters) {
    auto eq = f.find('=');
    if (eq == std::string::npos) throw Error(ErrorKind::InvalidArgument,
                "invalid --filter '" + f + "': use label=KEY[=VALUE], name=, status=, id=");
    std::string key = f.substr(0, eq), val = f.substr(eq + 1);
    if (key == "label") {
      auto eq2 = val.find('=');
      auto it = i.state.labels.find(val.substr(0, eq2));
      if (it == i.state.labels.end()) return false;
      if (eq2 != std::string::npos && it->second != val.substr(eq2 + 1)) return false;
    } else if (key == "name") {
      if (i.state.name != val) return false;
    } else if (key == "status") {
      if (i.status != val) return false;
    } else if (key == "id") {
      if (i.state.id.rfind(val, 0) != 0) return false;
    } else {
      throw Error(ErrorKind::InvalidArgument,
                  "invalid --filter '" + f + "': use label=KEY[=VALUE], name=, status=, id=");
    }
  }
  return true;
}

}  // namespace

runtime::BackendOptions Engine::backend_options(const std::string& runsc) const {
  runtime::BackendOptions o;
  o.run_root = cfg_.run_root;
  o.runsc = runsc;
  return o;
}

void Engine::apply_gpus(const GpuRequest& o, SandboxSpec& spec) {
  if (o.gpus.empty() && o.devices.empty()) return;
  gpu::HostRoot root{o.host_root};
  SandboxSpec out = spec;  // all-or-nothing
  if (o.gpus == "none" || o.gpus == "void") {
    gpu::apply_gpus({}, {}, root, out);  // docker's "no GPUs": needs no driver
  } else if (!o.gpus.empty()) {
    gpu::DiscoverOptions d;
    d.root = root;
    auto host = gpu::discover_nvidia(d);
    auto selected = gpu::select_gpus(host, o.gpus);
    // The backend says whether it can pass them through (gVisor: runsc's
    // nvproxy) and marks the spec for itself.
    if (!selected.empty()) runtime::backend_for(out.runtime, backend_options(o.runsc))->accept_gpus(out, host.driver_version);
    gpu::apply_gpus(host, selected, root, out);
  }
  std::vector<std::string> cdi;
  for (const auto& dev : o.devices) {
    if (gpu::is_cdi_name(dev))
      cdi.push_back(dev);
    else if (!dev.empty() && dev.front() == '/')
      gpu::apply_host_device(dev, root, out);
    else
      throw Error("--device " + dev + ": expected a CDI name (vendor/class=name) or a host device path (/dev/...)");
  }
  if (!cdi.empty()) gpu::CdiRegistry::load(root).apply(cdi, root, out);
  spec = std::move(out);
}

namespace {

/// One line on what a sandbox is about to be, for --log-level debug.
std::string describe(const SandboxSpec& s, UsernsMode userns) {
  std::string cmd;
  for (const auto& a : s.process.args) cmd += (cmd.empty() ? "" : " ") + a;
  std::string out = "runtime " + s.runtime + ", image " + (s.image_ref.empty() ? "(rootfs)" : s.image_ref);
  if (!s.image_id.empty()) out += " (" + s.image_id.substr(0, 12) + ", " + std::to_string(s.layer_dirs.size()) + " layers)";
  out += std::string(", userns ") + (userns == UsernsMode::Host ? "host" : "auto") + ", " + std::to_string(s.mounts.size()) +
         " mounts, command [" + cmd + "]";
  return out;
}

}  // namespace

RunResult Engine::run(const RunRequest& req) {
  auto t0 = std::chrono::steady_clock::now();
  auto backend = runtime::backend_for(req.spec.runtime, backend_options(req.runsc));
  backend->require(runtime::Operation::Run);
  RunResult r;
  r.id = req.spec.id.empty() ? runtime::new_sandbox_id() : req.spec.id;
  // --name: validated and unique among live sandboxes, as create's; held
  // until the run ends.
  runtime::ScopedName name(cfg_.run_root, req.spec.name, r.id);
  const SandboxSpec* spec = &req.spec;
  SandboxSpec with_copies;
  // --mount-snapshot: a private, writable copy of each directory snapshot,
  // removed when the run ends (or by 'sbx gc' after a crash).
  SnapshotCopies copies(cfg_.run_root, r.id);
  if (!req.mount_snapshots.empty() || req.spec.id.empty() || has_volume_mounts(cfg_.root, req.spec)) {
    with_copies = req.spec;
    with_copies.id = r.id;
    for (size_t i = 0; i < req.mount_snapshots.size(); ++i)
      with_copies.mounts.push_back(snapshot::mount_snapshot(cfg_.root, req.mount_snapshots[i], copies.dir(i)));
    spec = &with_copies;
  }
  // Named volumes: in use by this run until it ends. Its anonymous volumes
  // go with it (a run leaves no sandbox behind: docker run --rm's rule).
  std::vector<std::string> volumes = attach_volumes(with_copies);
  struct Detach {
    Engine* e;
    const std::string& id;
    const std::vector<std::string>& names;
    const std::vector<spec::Mount>& mounts;
    ~Detach() {
      // Only a run that attached volumes can have made anonymous ones (they
      // are among `names`): a run without any reads no volume record.
      if (names.empty()) return;
      std::vector<std::string> anon = spec_anonymous_volumes(e->config().root, mounts);
      e->detach_volumes(id, names);
      try {
        remove_unused_volumes(*e, anon);
      } catch (const Error& err) {
        log::warn("run " + id.substr(0, 12) + ": removing its anonymous volumes: " + err.what());
      }
    }
  } detach{this, r.id, volumes, with_copies.mounts};
  if (log::enabled(log::Level::debug)) log::debug("run " + r.id.substr(0, 12) + ": " + describe(*spec, req.userns));
  r.status = backend->run(*spec, use_userns(*spec, req.userns), req.io);
  r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  log::debug("run " + r.id.substr(0, 12) + ": ended (" + spec::end_reason(r.status) + ", exit " +
             std::to_string(spec::reported_exit_code(r.status)) + ") after " + std::to_string(r.elapsed.count()) + " ms");
  if (!r.status.usage.duration_ms) r.status.usage.duration_ms = static_cast<uint64_t>(r.elapsed.count());
  return r;
}

std::string Engine::create(const SandboxRequest& req) {
  auto backend = runtime::backend_for(req.spec.runtime, backend_options(req.runsc));
  backend->require(runtime::Operation::Create);
  if (log::enabled(log::Level::debug)) log::debug("create: " + describe(req.spec, req.userns));
  if (req.mount_snapshots.empty() && !has_volume_mounts(cfg_.root, req.spec))
    return backend->create(req.spec, use_userns(req.spec, req.userns), req.stdin_fd, req.reuse_layer);
  SandboxSpec spec = req.spec;
  if (spec.id.empty()) spec.id = runtime::new_sandbox_id();
  SnapshotCopies copies(cfg_.run_root, spec.id);
  for (size_t i = 0; i < req.mount_snapshots.size(); ++i)
    spec.mounts.push_back(snapshot::mount_snapshot(cfg_.root, req.mount_snapshots[i], copies.dir(i)));
  // Named volumes: in use by the sandbox until it is removed.
  // A container started again keeps its own anonymous volumes (its
  // previous spec names them).
  std::vector<std::string> had;
  try {
    if (fs::exists(runtime::sandbox_dir(cfg_.run_root, spec.id) + "/config.json"))
      had = spec_anonymous_volumes(cfg_.root, runtime::open_sandbox(cfg_.run_root, spec.id).spec().mounts);
  } catch (const Error&) {
  }
  std::vector<std::string> volumes = attach_volumes(spec);
  std::string id;
  try {
    id = backend->create(spec, use_userns(spec, req.userns), req.stdin_fd, req.reuse_layer);
  } catch (...) {
    // The anonymous volumes made for this attempt go with it; named ones stay.
    std::vector<std::string> made;
    for (const auto& n : spec_anonymous_volumes(cfg_.root, spec.mounts))
      if (std::find(had.begin(), had.end(), n) == had.end()) made.push_back(n);
    detach_volumes(spec.id, volumes);
    try {
      remove_unused_volumes(*this, made);
    } catch (const Error& e) {
      log::warn("create " + spec.id.substr(0, 12) + ": removing its anonymous volumes: " + e.what());
    }
    throw;
  }
  copies.keep();
  return id;
}

std::string Engine::resolve(const std::string& ref) { return runtime::resolve_id(cfg_.run_root, ref); }

ExecResult Engine::exec(const ExecRequest& req) {
  if (req.sandbox.empty()) throw Error("sbx exec: give a SANDBOX and a COMMAND; see 'sbx exec --help'");
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(req.sandbox));
  auto backend = runtime::backend_for(sb.state, backend_options());
  backend->require(runtime::Operation::Exec);
  ExecResult r;
  if (auto rec = trajectory::recorder_for(cfg_.run_root, sb.state.id)) {
    r.exit_code = rec->exec(req, [&](const runtime::ExecRequest& x) { return backend->exec(sb, x); }, &r.timed_out);
    return r;
  }
  r.exit_code = backend->exec(sb, req);
  r.timed_out = r.exit_code == kExitTimeout && req.timeout.count() > 0;
  return r;
}

runtime::CopyResult Engine::copy_in(const std::string& sandbox, const std::string& host_path,
                                    const std::string& sandbox_path) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(sandbox));
  auto backend = runtime::backend_for(sb.state, backend_options());
  backend->require(runtime::Operation::CopyIn);
  auto rec = trajectory::recorder_for(cfg_.run_root, sb.state.id);
  int64_t start = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto res = backend->copy_in(sb, host_path, sandbox_path);
  if (rec) {
    try {
      // The content is kept (deduplicated) up to a bound, for replay.
      bool store = trajectory::tree_bytes(host_path) <= trajectory::kCopyContentBound;
      uint64_t total = 0;
      auto files = trajectory::copy_manifest(host_path, rec->dir() + "/objects", store, total);
      std::string name = std::filesystem::path(host_path).filename().string();
      rec->append({{"kind", "cp_in"}, {"path", sandbox_path}, {"source_name", name}, {"files", res.files},
                   {"size", res.bytes}, {"sha256", oci::sha256_hex(files.dump())}, {"content_stored", store},
                   {"manifest", files}, {"start_ms", start}},
                  true);
    } catch (const Error& e) {
      log::warn("could not record the cp step: " + std::string(e.what()));
    }
  }
  return res;
}

runtime::CopyResult Engine::copy_out(const std::string& sandbox, const std::string& sandbox_path,
                                     const std::string& host_path, uint64_t max_bytes) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(sandbox));
  auto backend = runtime::backend_for(sb.state, backend_options());
  backend->require(runtime::Operation::CopyOut);
  auto rec = trajectory::recorder_for(cfg_.run_root, sb.state.id);
  int64_t start = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto res = backend->copy_out(sb, sandbox_path, host_path, max_bytes);
  if (rec) {
    try {
      uint64_t total = 0;
      auto files = trajectory::copy_manifest(host_path, "", false, total);
      rec->append({{"kind", "cp_out"}, {"path", sandbox_path}, {"files", res.files}, {"size", res.bytes},
                   {"sha256", oci::sha256_hex(files.dump())}, {"manifest", files}, {"start_ms", start}},
                  false);
    } catch (const Error& e) {
      log::warn("could not record the cp step: " + std::string(e.what()));
    }
  }
  return res;
}

runtime::PathStat Engine::stat_path(const std::string& sandbox, const std::string& sandbox_path) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(sandbox));
  auto backend = runtime::backend_for(sb.state, backend_options());
  backend->require(runtime::Operation::CopyOut);
  return backend->stat_path(sb, sandbox_path);
}

namespace {

/// Engine::list's work, with `inspect` reading each sandbox.
std::vector<runtime::SandboxInfo> list_with(const std::string& run_root, const ListRequest& req,
                                            runtime::SandboxInfo (*inspect)(const std::string&)) {
  // Check the filters first: a bad one is an error even with no sandbox.
  for (const auto& f : req.filters) {
    auto eq = f.find('=');
    std::string key = eq == std::string::npos ? "" : f.substr(0, eq);
    if (key != "label" && key != "name" && key != "status" && key != "id")
      throw Error(ErrorKind::InvalidArgument,
                  "invalid --filter '" + f + "': use label=KEY[=VALUE], name=, status=, id=");
  }
  std::vector<runtime::SandboxInfo> out;
  for (const auto& id : runtime::list_ids(run_root)) {
    try {
      auto info = inspect(runtime::sandbox_dir(run_root, id));
      if (!req.all && info.status != "running" && info.status != "creating") continue;
      if (matches(info, req.filters)) out.push_back(std::move(info));
    } catch (const Error&) {
      // Removed meanwhile, or created so recently that state.json is not there yet.
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.state.created_ms > b.state.created_ms; });
  return out;
}

}  // namespace

std::vector<runtime::SandboxInfo> Engine::list(const ListRequest& req) {
  return list_with(cfg_.run_root, req, &runtime::inspect_dir);
}

std::vector<runtime::SandboxInfo> list_status(const Engine& engine, const ListRequest& req) {
  return list_with(engine.config().run_root, req, &runtime::inspect_status);
}

runtime::SandboxInfo Engine::inspect(const std::string& ref) {
  return runtime::inspect_dir(runtime::sandbox_dir(cfg_.run_root, resolve(ref)));
}

void Engine::logs(const std::string& ref, bool follow, const std::function<void(const char*, size_t)>& out) {
  runtime::read_logs(runtime::sandbox_dir(cfg_.run_root, resolve(ref)), follow, out);
}

void Engine::log_records(const std::string& ref, bool follow,
                         const std::function<void(const runtime::LogRecord&)>& out) {
  runtime::read_log_records(runtime::sandbox_dir(cfg_.run_root, resolve(ref)), follow, out);
}

std::optional<runtime::EndRecord> Engine::wait(const std::string& ref, std::chrono::milliseconds timeout) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(ref));
  return runtime::backend_for(sb.state, backend_options())->wait(sb, timeout);
}

void Engine::reap(const runtime::SandboxState& st) noexcept {
  try {
    runtime::backend_for(st, backend_options())->reap(st);
  } catch (const Error&) {
    // A state naming no backend of this sbx: nothing it created.
  }
}

std::string Engine::stop(const std::string& ref, std::chrono::milliseconds grace) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(ref));
  runtime::backend_for(sb.state, backend_options())->stop(sb, grace);
  return sb.state.id;
}

std::string Engine::kill(const std::string& ref, int sig) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(ref));
  runtime::backend_for(sb.state, backend_options())->signal(sb, sig);
  return sb.state.id;
}

runtime::Stats Engine::stats(const std::string& ref) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(ref));
  return runtime::backend_for(sb.state, backend_options())->stats(sb);
}

runtime::ProcessTable Engine::processes(const std::string& ref) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(ref));
  auto backend = runtime::backend_for(sb.state, backend_options());
  backend->require(runtime::Operation::Processes);
  return backend->processes(sb);
}

std::vector<std::string> Engine::remove(const std::string& id, const RemoveRequest& req) {
  std::unique_ptr<runtime::Backend> backend;
  // The volumes its spec names (only those are read); unknown for a sandbox
  // whose config.json is lost, then every volume is looked at.
  std::optional<std::vector<spec::Mount>> mounts;
  try {
    auto sb = runtime::open_sandbox(cfg_.run_root, id);
    backend = runtime::backend_for(sb.state, backend_options());
    try {
      mounts = sb.spec().mounts;
    } catch (const Error&) {
    }
  } catch (const Error&) {
    // A half-created sandbox may have no readable state.json (or one naming
    // no backend): rm must still remove it, the same way for every backend.
  }
  if (backend) backend->remove(id, req.force);
  else runtime::remove_sandbox(cfg_.run_root, id, req.force);
  std::vector<std::string> anon = mounts ? detach_spec_volumes(id, *mounts) : detach_every_volume(*this, id);
  // create --mount-snapshot: the sandbox's private copies go with it.
  runtime::remove_sandbox_snapshot_copies(cfg_.run_root, id);
  if (!req.remove_anonymous_volumes) return {};
  try {
    return remove_unused_volumes(*this, anon);
  } catch (const Error& e) {
    log::warn("rm " + id.substr(0, 12) + ": removing its anonymous volumes: " + e.what());
    return {};
  }
}

// The one signal table sbx and sbx-runc share (runtime/linux/signals.h).
int parse_signal(const std::string& text) { return runtime::parse_signal(text); }

}  // namespace sbx::engine

// ---- pause (issue 17) --------------------------------------------------------

namespace sbx::engine {

void Engine::pause(const std::string& ref) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(ref));
  auto backend = runtime::backend_for(sb.state, backend_options());
  backend->require(runtime::Operation::Pause);
  backend->pause(sb);
}

void Engine::unpause(const std::string& ref) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(ref));
  auto backend = runtime::backend_for(sb.state, backend_options());
  backend->require(runtime::Operation::Pause);
  backend->unpause(sb);
}

}  // namespace sbx::engine
