#include "engine/build/run_step.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "oci/tree.h"
#include "runtime/default_bounds.h"
#include "runtime/linux/rlimits.h"
#include "runtime/backends.h"
#include "runtime/state.h"
#include "runtime/warm_sandbox.h"

namespace sbx::build {

namespace {

/// `sbx run`'s default --pids-limit (cli/sandbox_flags.h SandboxFlags).
constexpr int64_t kStepPidsLimit = 1024;

bool empty_dir(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (!d) return false;
  bool none = true;
  while (dirent* de = ::readdir(d)) {
    std::string n = de->d_name;
    if (n != "." && n != "..") {
      none = false;
      break;
    }
  }
  ::closedir(d);
  return none;
}

}  // namespace

SandboxSpec step_spec(const RunStep& s) {
  SandboxSpec spec;
  spec.id = runtime::new_sandbox_id();
  spec.hostname = spec.id.substr(0, 12);
  spec.image_ref = s.image_id;
  spec.image_id = s.image_id;
  spec.layer_dirs = s.layer_dirs;
  spec.upper_dir = s.upper_dir;
  spec.process.args = s.args;
  spec.process.env = s.env;
  spec.process.cwd = s.workdir.empty() ? "/" : s.workdir;
  spec.process.user = s.user;
  spec.process.capabilities = default_capabilities();
  spec.network = s.network;
  spec.mounts = s.mounts;
  spec.resources.pids_limit = kStepPidsLimit;
  // Memory and open files as `sbx run`; no disk bound (the upper dir is on disk).
  runtime::apply_default_bounds(spec, false);
  runtime::clamp_rlimits(spec.process.rlimits);
  spec.labels["sbx.build"] = "step";
  return spec;
}

RunStepResult run_step(const RunStep& step, const std::function<void(const char*, size_t)>& output) {
  SandboxSpec spec = step_spec(step);
  // As `sbx run`: its own user namespace unless it shares the host's network
  // namespace (which belongs to the host's user namespace). A warm sandbox of
  // the native backend: its command comes with stdio fds of ours.
  const bool userns = step.network != NetworkMode::Host;
  runtime::BackendOptions bo;
  bo.run_root = step.run_root;
  auto backend = runtime::backend_for(runtime::default_backend_name(), bo);

  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) throw_errno("create the output pipe of a RUN step");
  Fd out_r(p[0]), out_w(p[1]);
  Fd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (null.fd < 0) throw_errno("open /dev/null");

  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<runtime::WarmSandbox> sb = backend->start_warm(spec, userns);
  RunStepResult res;
  res.uid_map = res.gid_map = sb->id_map();
  // The reader starts after the start: it inherits the blocked signals, so
  // the caller's thread (the wait) is the one that sees them.
  std::thread reader([&, fd = out_r.fd] {
    char buf[16384];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (output) output(buf, static_cast<size_t>(n));
    }
  });
  auto finish = [&] {
    if (out_w.fd >= 0) ::close(std::exchange(out_w.fd, -1));
    sb.reset();  // the last writers of the pipe go with the sandbox
    reader.join();
  };
  try {
    runtime::PooledCommand cmd;
    cmd.args = step.args;
    cmd.env = step.env;
    cmd.files = step.files;
    cmd.stdio[0] = null.fd;
    cmd.stdio[1] = out_w.fd;
    cmd.stdio[2] = out_w.fd;
    try {
      sb->run(cmd);
    } catch (const Error& e) {
      if (e.exit_code() != kExitNotFound && e.exit_code() != kExitCannotExec) throw;
      // The command itself could not start: a failed step, with the reason as its output.
      std::string msg = std::string(e.what()) + "\n";
      if (output) output(msg.data(), msg.size());
      res.status.exit_code = e.exit_code();
      finish();
      res.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
      return res;
    }
    ::close(std::exchange(out_w.fd, -1));
    res.status = sb->wait({}, step.forward_signals);
  } catch (...) {
    finish();
    throw;
  }
  finish();
  res.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  return res;
}

void scrub_upper(const std::string& upper, const std::vector<std::string>& mount_points,
                 const std::function<bool(const std::string&)>& image_has) {
  auto remove = [&](const std::string& path) {
    struct stat st;
    std::string hp = upper + path;
    if (::lstat(hp.c_str(), &st) < 0) return false;
    if (S_ISDIR(st.st_mode))
      oci::remove_tree(hp);
    else if (::unlink(hp.c_str()) < 0)
      throw_errno("remove " + hp);
    return true;
  };
  std::vector<std::string> parents;
  for (const char* f : {"/etc/hostname", "/etc/hosts", "/etc/resolv.conf"})
    if (remove(f)) parents.push_back("/etc");
  std::vector<std::string> stubs = {"/proc", "/sys", "/dev"};
  stubs.insert(stubs.end(), mount_points.begin(), mount_points.end());
  for (const auto& m : stubs) {
    if (image_has(m)) continue;
    struct stat st;
    std::string hp = upper + m;
    if (::lstat(hp.c_str(), &st) < 0) continue;
    if ((S_ISDIR(st.st_mode) && empty_dir(hp)) || (S_ISREG(st.st_mode) && st.st_size == 0)) {
      remove(m);
      size_t s = m.rfind('/');
      if (s != std::string::npos && s > 0) parents.push_back(m.substr(0, s));
    }
  }
  // Parents made only for what was removed: empty now. A parent the image
  // has is a copy-up; an empty one hides nothing and adds nothing but its
  // own metadata, which the sandbox's setup (not the command) changed.
  for (size_t i = 0; i < parents.size(); ++i) {
    const std::string p = parents[i];
    std::string hp = upper + p;
    struct stat st;
    if (::lstat(hp.c_str(), &st) < 0 || !S_ISDIR(st.st_mode) || !empty_dir(hp)) continue;
    char v[2] = {};
    if (::lgetxattr(hp.c_str(), "trusted.overlay.opaque", v, sizeof v) > 0) continue;
    if (::lgetxattr(hp.c_str(), "user.overlay.opaque", v, sizeof v) > 0) continue;
    if (::rmdir(hp.c_str()) < 0) continue;
    size_t s = p.rfind('/');
    if (s != std::string::npos && s > 0) parents.push_back(p.substr(0, s));
  }
}

}  // namespace sbx::build
