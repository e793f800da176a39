#include "snapshot/checkpoint.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/tree.h"
#include "runtime/gvisor_lifecycle.h"
#include "runtime/lifecycle.h"
#include "runtime/state.h"

namespace sbx::snapshot {

namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

std::string ckpt_dir(const std::string& root, const std::string& id) { return root + "/snapshots/checkpoints/" + id; }

/// Runs argv with stdin on /dev/null and stdout+stderr into `out_file`
/// (a file, not a pipe: a detached runsc sandbox keeps its stdio open).
/// `rootfs_layers` non-empty: first mounts them read-only at `rootfs_target`
/// in a private mount namespace that runsc (and its gofer) inherit.
pid_t spawn(const std::vector<std::string>& argv, const std::string& out_file,
            const std::vector<std::string>& rootfs_layers = {}, const std::string& rootfs_target = "") {
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork for " + argv[0]);
  if (pid == 0) {
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (in >= 0) ::dup2(in, 0);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    if (!rootfs_layers.empty()) {
      if (::unshare(CLONE_NEWNS) < 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
        std::fprintf(stderr, "sbx: private mount namespace for runsc: %s\n", std::strerror(errno));
        ::_exit(125);
      }
      int r;
      if (rootfs_layers.size() == 1) {
        r = ::mount(rootfs_layers[0].c_str(), rootfs_target.c_str(), nullptr, MS_BIND | MS_REC, nullptr);
        if (r == 0) r = ::mount(nullptr, rootfs_target.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr);
      } else {
        std::string lower;
        for (auto it = rootfs_layers.rbegin(); it != rootfs_layers.rend(); ++it) lower += (lower.empty() ? "" : ":") + *it;
        r = ::mount("overlay", rootfs_target.c_str(), "overlay", MS_RDONLY, ("lowerdir=" + lower).c_str());
      }
      if (r < 0) {
        std::fprintf(stderr, "sbx: mount the image layers on %s: %s\n", rootfs_target.c_str(), std::strerror(errno));
        ::_exit(125);
      }
    }
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    std::fprintf(stderr, "sbx: execute %s: %s\n", argv[0].c_str(), std::strerror(errno));
    ::_exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string tail_of(const std::string& path, size_t max = 2000) {
  try {
    std::string s = fs::read_file(path);
    return s.size() > max ? s.substr(s.size() - max) : s;
  } catch (const Error&) {
    return "";
  }
}

std::string random_hex(size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* k = "0123456789abcdef";
  std::string s;
  while (s.size() < n) s += k[rng() & 15];
  return s;
}

uint64_t dir_bytes(const std::string& d) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto& e : std::filesystem::recursive_directory_iterator(d, ec))
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  return n;
}

std::vector<std::string> runsc_base(const std::string& runsc, const std::string& root, const std::vector<std::string>& flags,
                                    const std::string& log) {
  std::vector<std::string> a = {runsc, "--root", root};
  if (!log.empty()) a.insert(a.end(), {"--log", log});
  a.insert(a.end(), flags.begin(), flags.end());
  return a;
}

// The state of a sandbox sbx restore (or start_gvisor_detached) is starting:
// "creating" by this process until its monitor answers (runtime/state.h).
runtime::SandboxState restored_state(const std::string& id, const std::string& name, const std::string& image,
                                     const json& config) {
  runtime::SandboxState st;
  st.id = id;
  st.name = name;
  st.image_id = st.image_ref = image;
  st.runtime = "gvisor";
  st.status = "creating";
  st.created_ms = runtime::now_ms();
  try {
    st.command = config.at("process").at("args").get<std::vector<std::string>>();
  } catch (const json::exception&) {
  }
  st.creator_pid = ::getpid();
  st.creator_start = runtime::process_start_time(::getpid());
  return st;
}

// Its monitor answered: the sandbox runs (pid: its monitor, as state.json says).
void mark_running(RestoredSandbox& s) {
  runtime::SandboxState st = runtime::read_state(s.dir);
  st.status = "running";
  st.started_ms = runtime::now_ms();
  runtime::write_state(s.dir, st);
  s.pid = st.pid;
}

}  // namespace

void fail_native_checkpoint() {
  const std::string hint = "; checkpoint a sandbox started with --runtime gvisor instead";
  std::string criu;
  for (const char* p : {"/usr/sbin/criu", "/usr/bin/criu", "/usr/local/sbin/criu", "/usr/local/bin/criu"})
    if (::access(p, X_OK) == 0) {
      criu = p;
      break;
    }
  if (criu.empty())
    throw Error("memory snapshots of native sandboxes need CRIU (https://criu.org), which is not installed" + hint);
  char tmpl[] = "/tmp/sbx-criu-check.XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) throw_errno("create temp file for criu check");
  ::close(fd);
  int code = wait_exit(spawn({criu, "check"}, tmpl));
  std::string out = tail_of(tmpl, 4000);
  ::unlink(tmpl);
  // criu check prints "Looks good." on success; some versions exit 0 with errors.
  bool ok = code == 0 && out.find("Error") == std::string::npos;
  if (!ok) {
    std::string first;
    size_t p = out.find("Error");
    first = p == std::string::npos ? out.substr(0, out.find('\n')) : out.substr(p, out.find('\n', p) - p);
    std::string why = out.find("vdso") != std::string::npos
                          ? " (this CRIU cannot parse this kernel's vDSO layout; CRIU 4.1 or newer fixes it)"
                          : "";
    throw Error("memory snapshots of native sandboxes need a working CRIU, but 'criu check' fails on this host: " +
                    first + why + hint,
                0, kExitSbxFailed);
  }
  throw Error("this host has a working CRIU, but sbx does not checkpoint native sandboxes with CRIU yet" + hint);
}

SnapshotRecord checkpoint_gvisor(const std::string& root, const GvisorCheckpointRequest& req) {
  if (req.container_id.empty()) throw Error("checkpoint: no sandbox id given");
  std::string name = req.name.empty() ? "ckpt-" + req.container_id.substr(0, 12) + "-" + random_hex(6) : req.name;
  if (name.find('/') != std::string::npos || name.find(':') != std::string::npos || name[0] == '.')
    throw Error("invalid snapshot name '" + name + "': use letters, digits, '.', '-', '_' (no '/' or ':')");
  const std::string id = random_hex(32);  // content dir: names can be reused while an old copy is removed
  const std::string dir = ckpt_dir(root, id);
  fs::mkdir_p(dir + "/image", 0700);
  try {
    fs::write_file_atomic(dir + "/config.json", fs::read_file(req.bundle + "/config.json"), 0600);
    json meta = {{"layer_dirs", req.layer_dirs},
                 {"runsc_flags", req.runsc_flags},
                 {"container_id", req.container_id},
                 {"image", req.image}};
    fs::write_file_atomic(dir + "/meta.json", meta.dump(2), 0600);
    std::vector<std::string> argv = runsc_base(req.runsc, req.runsc_root, req.runsc_flags, "");
    argv.insert(argv.end(), {"checkpoint", "--image-path", dir + "/image"});
    if (req.leave_running) argv.push_back("--leave-running");
    argv.push_back(req.container_id);
    std::string out = dir + "/checkpoint.log";
    int code = wait_exit(spawn(argv, out));
    if (code != 0)
      throw Error("runsc checkpoint of sandbox " + req.container_id + " failed (exit " + std::to_string(code) +
                  "): " + tail_of(out));
    ::unlink(out.c_str());
  } catch (...) {
    try {
      oci::remove_tree(dir);
    } catch (const Error& e) {
      log::warn(e.what());
    }
    throw;
  }
  SnapshotRecord rec;
  rec.name = name;
  rec.kind = "memory";
  rec.runtime = "gvisor";
  rec.id = id;
  rec.size = dir_bytes(dir);
  rec.parent = req.parent.empty() ? req.container_id : req.parent;
  rec.source = req.image;
  rec.created = now_rfc3339();
  // A name reused: the old content goes once the new record replaces it.
  std::vector<SnapshotRecord> old = read_catalog(root);
  put_record(root, rec);
  for (const auto& o : old)
    if (o.name == name && o.kind == "memory" && o.id != id) {
      try {
        oci::remove_tree(ckpt_dir(root, o.id));
      } catch (const Error& e) {
        log::warn(e.what());
      }
    }
  return rec;
}

std::vector<RestoredSandbox> restore_gvisor(const std::string& root, const std::string& name, const RestoreOptions& opts) {
  if (opts.count < 1 || opts.count > 4096) throw Error("--count must be between 1 and 4096");
  SnapshotRecord rec = find_record(root, name, "memory");
  if (rec.runtime != "gvisor") throw Error("snapshot '" + name + "' was taken with runtime " + rec.runtime + "; only gvisor memory snapshots can be restored here");
  const std::string cdir = ckpt_dir(root, rec.id);
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

  struct Pending {
    RestoredSandbox s;
    runtime::SandboxState st;
    runtime::GvisorMonitor mon;
    clock_type::time_point t0;
  };
  std::vector<Pending> ps;
  std::string err;
  runtime::GvisorLaunch launch;
  launch.runsc = opts.runsc;
  launch.runsc_flags = flags;
  launch.layer_dirs = layers;
  launch.restore_image = cdir + "/image";
  launch.image = meta.value("image", "");
  // Prepare every bundle and start every copy's monitor (each runs `runsc
  // restore`) at once, then wait for them all. Each copy is a first-class
  // sandbox: a fresh id, the name NAME or NAME-i, ps/exec/logs/stop/rm.
  for (int i = 0; i < opts.count && err.empty(); ++i) {
    Pending p;
    p.s.id = random_hex(64);
    p.s.dir = runtime::sandbox_dir(opts.run_root, p.s.id);
    p.s.runsc_root = p.s.dir + "/runsc";
    p.s.output = p.s.dir + "/log";
    std::string sname = opts.name.empty() ? "" : (opts.count == 1 ? opts.name : opts.name + "-" + std::to_string(i + 1));
    try {
      fs::mkdir_p(p.s.dir + "/bundle/rootfs", 0700);
      json c = config;
      c["root"]["path"] = p.s.dir + "/bundle/rootfs";
      c["linux"]["cgroupsPath"] = "/sbx-" + p.s.id.substr(0, 12);  // its own cgroup
      fs::write_file_atomic(p.s.dir + "/bundle/config.json", c.dump(), 0600);
      fs::write_file_atomic(p.s.dir + "/config.json", c.dump(2), 0600);  // inspect, exec
      p.st = restored_state(p.s.id, sname, launch.image, c);
      runtime::write_state(p.s.dir, p.st);
      if (!sname.empty()) runtime::claim_name(opts.run_root, sname, p.s.id);
      p.t0 = clock_type::now();
      p.mon = runtime::spawn_gvisor_monitor(p.s.dir, p.st, launch, nullptr);
    } catch (const std::exception& e) {
      err = "restore of '" + name + "' as " + p.s.id.substr(0, 12) + ": " + e.what();
    }
    ps.push_back(std::move(p));
  }
  for (auto& p : ps) {
    if (p.mon.pid < 0) continue;
    try {
      runtime::await_gvisor_monitor(p.s.dir, p.s.id, p.mon);
      p.s.restore_ms = std::chrono::duration<double, std::milli>(clock_type::now() - p.t0).count();
      mark_running(p.s);
    } catch (const std::exception& e) {
      if (err.empty()) err = "runsc restore of '" + name + "' as " + p.s.id.substr(0, 12) + " failed: " + e.what();
    }
  }
  if (!err.empty()) {
    for (auto& p : ps) destroy_restored(opts.runsc, p.s);
    throw Error(err);
  }
  touch_record(root, name);
  std::vector<RestoredSandbox> out;
  for (auto& p : ps) out.push_back(p.s);
  return out;
}

RestoredSandbox start_gvisor_detached(const std::string& runsc, const std::string& run_root, const std::string& id,
                                      const std::string& config_json, const std::vector<std::string>& layer_dirs,
                                      const std::vector<std::string>& runsc_flags, const std::string& image) {
  if (layer_dirs.empty()) throw Error("gvisor: the image has no layers to use as a rootfs");
  RestoredSandbox s;
  s.id = id;
  s.dir = run_root + "/" + id;
  s.runsc_root = s.dir + "/runsc";
  s.output = s.dir + "/log";
  if (fs::exists(s.dir)) throw Error("a sandbox named " + id + " exists already in " + run_root);
  try {
    fs::mkdir_p(s.dir + "/bundle/rootfs", 0700);
    json c = json::parse(config_json);
    c["root"]["path"] = s.dir + "/bundle/rootfs";
    c["linux"]["cgroupsPath"] = "/sbx-" + id.substr(0, 12);
    fs::write_file_atomic(s.dir + "/bundle/config.json", c.dump(), 0600);
    fs::write_file_atomic(s.dir + "/config.json", c.dump(2), 0600);
    runtime::SandboxState st = restored_state(id, "", image, c);
    runtime::write_state(s.dir, st);
    runtime::GvisorLaunch launch;
    launch.runsc = runsc;
    launch.runsc_flags = runsc_flags;
    launch.layer_dirs = layer_dirs;
    launch.image = image;
    auto t0 = clock_type::now();
    runtime::start_gvisor_monitor(s.dir, st, launch, nullptr);
    s.restore_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    mark_running(s);
  } catch (const json::exception& e) {
    destroy_restored(runsc, s);
    throw Error(std::string("gvisor: invalid runtime config: ") + e.what());
  } catch (...) {
    destroy_restored(runsc, s);
    throw;
  }
  return s;
}

void destroy_restored(const std::string& runsc, const RestoredSandbox& s) {
  (void)runsc;  // the sandbox's meta.json names the runsc it runs under
  if (s.dir.empty() || s.id.empty()) return;
  try {
    runtime::remove_sandbox(s.dir.substr(0, s.dir.rfind('/')), s.id, true);
  } catch (const Error& e) {
    log::warn(e.what());
  }
}

RestoredSandbox restored_from_dir(const std::string& run_root, const std::string& id) {
  RestoredSandbox s;
  s.id = id;
  s.dir = run_root + "/" + id;
  s.runsc_root = s.dir + "/runsc";
  s.output = s.dir + "/log";
  if (!fs::exists(s.dir)) throw Error("no sandbox " + id + " in " + run_root, ENOENT, 1);
  try {
    s.pid = runtime::read_state(s.dir).pid;  // its monitor
  } catch (const Error&) {
  }
  return s;
}

}  // namespace sbx::snapshot
