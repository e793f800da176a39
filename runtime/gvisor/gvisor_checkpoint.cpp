#include "runtime/gvisor/gvisor_checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/runtime_config.h"
#include "runtime/gvisor/gvisor.h"
#include "runtime/gvisor/gvisor_bundle.h"
#include "runtime/gvisor/gvisor_lifecycle.h"
#include "runtime/lifecycle.h"
#include "runtime/linux/cgroups.h"
#include "runtime/linux/clone_child.h"  // other_threads_exist
#include "runtime/linux/run_command.h"
#include "runtime/sandbox_log.h"
#include "runtime/state.h"

namespace sbx::runtime {

namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

std::vector<std::string> runsc_base(const std::string& runsc, const std::string& root, const std::vector<std::string>& flags,
                                    const std::string& log) {
  std::vector<std::string> a = {runsc, "--root", root};
  if (!log.empty()) a.insert(a.end(), {"--log", log});
  a.insert(a.end(), flags.begin(), flags.end());
  return a;
}

/// The gVisor backend in `run_root` (for its remove: rm -f the gVisor way).
GvisorBackend backend_in(const std::string& run_root) {
  BackendOptions o;
  o.run_root = run_root;
  return GvisorBackend(o);
}

/// Removes a restored sandbox as `sbx rm -f` does: kills it, releases runsc's
/// state and cgroups, removes its state dir (no throw; problems are logged).
void destroy_restored(const std::string& run_root, const RestoredSandbox& s) {
  if (s.dir.empty()) return;
  try {
    backend_in(run_root).remove(s.id, true);
  } catch (const Error& e) {
    log::warn(std::string("remove restored sandbox: ") + e.what() + "; 'sbx gc' will retry");
  }
}

}  // namespace

GvisorCheckpointRequest gvisor_request(const std::string& run_root, const SandboxState& st) {
  const std::string dir = run_root + "/" + st.id;
  GvisorCheckpointRequest r;
  r.runsc_root = dir + "/runsc";
  r.bundle = dir + "/bundle";
  r.container_id = st.id;
  r.image = st.image_id.empty() ? st.image_ref : st.image_id;
  r.image_ref = st.image_ref;
  if (!fs::exists(dir + "/meta.json") || !fs::exists(r.bundle + "/config.json"))
    throw Error("sandbox " + st.id + " has no gvisor bundle and meta.json in " + dir + "; it was not started by a version of sbx that can checkpoint it");
  try {
    auto m = json::parse(fs::read_file(dir + "/meta.json"));
    r.layer_dirs = m.value("layer_dirs", std::vector<std::string>{});
    r.runsc_flags = m.value("runsc_flags", std::vector<std::string>{});
    if (r.image.empty()) r.image = m.value("image", "");
  } catch (const json::exception& e) {
    throw Error(dir + "/meta.json is corrupt: " + e.what());
  }
  return r;
}

void refuse_gpu_checkpoint(const GvisorCheckpointRequest& req) {
  if (gvisor::sandbox_has_gpus(req.runsc_flags, req.bundle))
    throw Error("cannot checkpoint sandbox " + req.container_id.substr(0, 12) +
                ": it has NVIDIA GPUs (runsc --nvproxy), and runsc cannot save GPU state (device memory and "
                "driver objects live outside the sandbox's kernel); nothing was written and the sandbox keeps "
                "running. Checkpoint a sandbox started without --gpus");
}

void checkpoint_gvisor(const std::string& dir, const GvisorCheckpointRequest& req) {
  if (req.container_id.empty()) throw Error("checkpoint: no sandbox id given");
  refuse_gpu_checkpoint(req);  // before anything is written
  // A restore would need a fresh network namespace, lease and rules for the
  // copy (runtime/gvisor/gvisor_network.h), which restore does not make yet.
  if (std::find(req.runsc_flags.begin(), req.runsc_flags.end(), "--network=sandbox") != req.runsc_flags.end())
    throw Error("cannot checkpoint sandbox " + req.container_id.substr(0, 12) +
                ": it has a network of its own (--network private or a user-defined network), and restoring a "
                "gVisor sandbox into a new one is not supported yet; nothing was written and the sandbox keeps "
                "running. Checkpoint a sandbox with --network none or host");
  fs::mkdir_p(dir + "/image", 0700);
  try {
    fs::write_file_atomic(dir + "/config.json", fs::read_file(req.bundle + "/config.json"), 0600);
    json meta = {{"layer_dirs", req.layer_dirs},
                 {"runsc_flags", req.runsc_flags},
                 {"container_id", req.container_id},
                 {"image", req.image},
                 {"image_ref", req.image_ref}};
    fs::write_file_atomic(dir + "/meta.json", meta.dump(2), 0600);
    std::vector<std::string> argv = runsc_base(req.runsc, req.runsc_root, req.runsc_flags, "");
    argv.insert(argv.end(), {"checkpoint", "--image-path", dir + "/image"});
    if (req.leave_running) argv.push_back("--leave-running");
    argv.push_back(req.container_id);
    std::string out = dir + "/checkpoint.log";
    int code = run_logged(argv, out);
    if (code != 0)
      throw Error("runsc checkpoint of sandbox " + req.container_id + " failed (exit " + std::to_string(code) +
                  "): " + gvisor::read_tail(out, 2000));
    ::unlink(out.c_str());
  } catch (...) {
    if (int e = remove_tree(dir)) log::warn("remove " + dir + ": " + std::strerror(e));
    throw;
  }
}

std::vector<RestoredSandbox> restore_gvisor(const std::string& cdir, const std::string& name,
                                            const GvisorRestoreOptions& opts) {
  if (opts.count < 1 || opts.count > 4096) throw Error(ErrorKind::InvalidArgument,
              "--count must be between 1 and 4096");
  if (opts.resume && opts.count != 1) throw Error("restore: resuming a sandbox needs --count 1");
  json meta, config;
  try {
    meta = json::parse(fs::read_file(cdir + "/meta.json"));
    config = json::parse(fs::read_file(cdir + "/config.json"));
  } catch (const json::exception& e) {
    throw Error("memory snapshot '" + name + "' in " + cdir + " is corrupt (" + e.what() + "); remove it with 'sbx snapshots rm " + name + "'");
  }
  std::vector<std::string> layers = opts.layer_dirs.empty() ? meta.value("layer_dirs", std::vector<std::string>{}) : opts.layer_dirs;
  for (const auto& l : layers)
    if (!fs::exists(l)) throw Error("memory snapshot '" + name + "' needs image layer " + l + ", which is gone (was the image removed?)");
  if (layers.empty()) throw Error("memory snapshot '" + name + "' records no image layers");
  std::vector<std::string> flags = meta.value("runsc_flags", std::vector<std::string>{});
  const std::string image = meta.value("image", "");
  const std::string image_ref = meta.value("image_ref", image);
  // The limits the sandbox ran with (its config, --pids-limit head room
  // included): each copy's cgroup gets them, as create does.
  Resources limits;
  try {
    limits = oci::from_runtime_config(config.dump()).resources;
  } catch (const Error& e) {
    throw Error("memory snapshot '" + name + "': its config.json cannot be read (" + e.what() + ")");
  }

  // Each copy is an ordinary long-lived gVisor sandbox (runtime/gvisor/gvisor_lifecycle.h):
  // its own id, state dir, name, monitor, runsc root, cgroups and bundle, with
  // `runsc restore` in place of `runsc run`; ps/exec/logs/stop/rm work on it.
  // One after another: each restore already keeps this host's CPUs busy.
  std::vector<RestoredSandbox> out;
  fs::mkdir_p(opts.run_root, 0700);
  try {
    for (int i = 0; i < opts.count; ++i) {
      const std::string nm = opts.name.empty() ? "" : opts.count == 1 ? opts.name : opts.name + "-" + std::to_string(i + 1);
      const auto t0 = clock_type::now();
      RestoredSandbox s;
      s.id = opts.resume ? opts.resume->id : new_sandbox_id();
      s.dir = sandbox_dir(opts.run_root, s.id);
      s.output = s.dir + "/" + kRecordLog;
      json c = config;
      c["root"]["path"] = s.dir + "/bundle/rootfs";
      // Its own cgroup, made by sbx under sbx's own with the config's limits
      // (below); runsc starts in it and does no cgroup work, as for create.
      if (c.contains("linux")) c["linux"].erase("cgroupsPath");
      SandboxState st;
      st.id = s.id;
      st.name = nm;
      st.image_id = image;
      st.image_ref = image_ref;
      st.runtime = GvisorBackend::kName;
      st.status = "creating";
      st.created_ms = now_ms();
      st.labels = {{"sbx.restored-from", name}};
      st.command = c.value("/process/args"_json_pointer, std::vector<std::string>{});
      if (opts.resume) {  // the same sandbox, going on
        st.name = opts.resume->name;
        st.labels = opts.resume->labels;
        st.image_id = opts.resume->image_id;
        st.image_ref = opts.resume->image_ref;
        st.command = opts.resume->command;
        st.created_ms = opts.resume->created_ms;
      }
      st.creator_pid = ::getpid();
      st.creator_start = process_start_time(::getpid());
      st.creator_shared = other_threads_exist();  // sbx serve: rm -f must not kill it
      st.cgroups = sandbox_cgroup_dirs(s.id);  // where Cgroup::create makes them
      // As create: the dir appears under its id only once state.json is in it.
      const std::string fresh = opts.run_root + "/.new-" + s.id;
      if (::mkdir(fresh.c_str(), 0700) < 0) throw_errno("create the sandbox state directory " + fresh);
      try {
        fs::write_file_atomic(fresh + "/config.json", c.dump(2), 0600);  // inspect, exec
        if (!opts.resume_log.empty()) fs::write_file_atomic(fresh + "/log", opts.resume_log, 0600);
        write_state(fresh, st);
        if (::rename(fresh.c_str(), s.dir.c_str()) < 0) throw_errno("rename " + fresh + " to " + s.dir);
      } catch (...) {
        remove_tree(fresh);
        throw;
      }
      out.push_back(s);  // from here on, a failure removes it with the others
      if (!st.name.empty()) claim_name(opts.run_root, st.name, s.id);
      GvisorLaunch l;
      {
        Cgroup cg = Cgroup::create(s.id, limits);
        l.cgroup_dirs = cg.paths();
        cg.release();  // state.json names it; rm (and a failure here) removes it
      }
      l.runsc = opts.runsc;
      l.runsc_flags = flags;
      l.layer_dirs = layers;
      l.image = image;
      l.restore_image = cdir + "/image";
      const std::string bundle_config = s.dir + "/bundle/config.json";
      start_gvisor_monitor(s.dir, st, l, [c, bundle_config](const std::string& rootfs) mutable {
        c["root"]["path"] = rootfs;
        fs::write_file_atomic(bundle_config, c.dump(), 0600);
      });
      st = read_state(s.dir);
      st.status = "running";
      st.started_ms = now_ms();
      write_state(s.dir, st);
      out.back().pid = st.pid;
      out.back().restore_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    }
  } catch (const Error& e) {
    for (const auto& s : out) destroy_restored(opts.run_root, s);
    throw Error("restore of memory snapshot '" + name + "' failed: " + e.what() +
                    (out.empty() ? "" : " (the copies started so far were removed)"),
                e.err(), e.exit_code());
  }
  return out;
}

CheckpointResult checkpoint_gvisor_resume(const std::string& cdir, const std::string& name, const std::string& run_root,
                                          GvisorCheckpointRequest req) {
  const std::string dir = sandbox_dir(run_root, req.container_id);
  const SandboxState st = read_state(dir);
  req.leave_running = false;
  checkpoint_gvisor(cdir, req);  // the sandbox stops here
  CheckpointResult r;
  r.image = req.image;
  // Its monitor sees runsc end and cleans up; wait for it (bounded), keep the log.
  for (int i = 0; i < 2000 && state_alive(st); ++i) ::usleep(5000);
  // Its output so far, as text (stdout and stderr joined; the restored
  // sandbox's own output is kept by stream again).
  std::string log;
  try {
    read_logs(dir, false, [&](const char* p, size_t n) { log.append(p, n); });
  } catch (const Error&) {
  }
  try {
    backend_in(run_root).remove(st.id, true);
    GvisorRestoreOptions o;
    o.runsc = req.runsc;
    o.run_root = run_root;
    o.resume = &st;
    o.resume_log = std::move(log);
    restore_gvisor(cdir, name, o);
  } catch (const Error& e) {
    r.resume_error = e.what();
    r.resume_exit_code = e.exit_code();
  }
  return r;
}

}  // namespace sbx::runtime
