// create_sandbox (runtime/native/create.h): the native detached start path.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/runtime_config.h"
#include "runtime/lifecycle.h"
#include "runtime/native/create.h"
#include "runtime/linux/clone_child.h"
#include "runtime/linux/mounts.h"
#include "runtime/native/native_backend.h"
#include "runtime/linux/userns.h"

namespace sbx::runtime {

namespace {

/// DIR/config.json: the spec as an OCI runtime config (its rootfs: the upper dir).
void write_config(const std::string& dir, const SandboxSpec& spec) {
  oci::RuntimeConfigOptions rc;
  rc.rootfs_path = spec.upper_dir + "/upper";
  if (spec.process.args.empty()) {
    // Hold only: config.json must name a process; this one says what runs
    // (the holder, no first process) and is never exec'd.
    SandboxSpec shown = spec;
    shown.process.args = {"sbx-holder"};
    shown.annotations["org.sbx.hold-only"] = "true";
    fs::write_file_atomic(dir + "/config.json", oci::to_runtime_config(shown, rc), 0600);
  } else {
    fs::write_file_atomic(dir + "/config.json", oci::to_runtime_config(spec, rc), 0600);
  }
}

/// --disk: a tmpfs of `bytes` on `path` (the upper dir's parent), mounted on
/// the host because the sandbox outlives this sbx; remove_tree (rm, gc)
/// detaches it. Private, so it propagates nowhere.
void mount_disk_tmpfs(const std::string& path, uint64_t bytes) {
  std::string data = "mode=0700," + tmpfs_size_option(bytes);
  if (::mount("sbx-disk", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, data.c_str()) < 0)
    throw_errno("mount the --disk tmpfs on " + path);
  if (::mount(nullptr, path.c_str(), nullptr, MS_PRIVATE, nullptr) < 0) {
    int e = errno;
    ::umount2(path.c_str(), MNT_DETACH);
    throw_errno("make the --disk tmpfs on " + path + " private", e);
  }
}

}  // namespace

std::string create_sandbox(SandboxSpec spec, const std::string& run_root, const CreateOptions& opts) {
  if (spec.id.empty()) spec.id = new_sandbox_id();
  const std::string id = spec.id;
  fs::mkdir_p(run_root, 0700);
  const std::string dir = sandbox_dir(run_root, id);
  // The dir appears under its id only with a state.json in it: it is built as
  // RUN_ROOT/.new-<id> and renamed (a crash before that leaves only a .new-
  // dir, which `gc` removes once its creator is dead).
  const std::string fresh = run_root + "/.new-" + id;
  // reuse_layer: the ended sandbox of this id gives its writable layer (and
  // its user-namespace slot) to this one, then goes.
  int old_slot = -1;
  if (opts.reuse_layer) {
    SandboxState old = read_state(dir);  // throws when there is none
    if (old.status == "creating" || state_alive(old))
      throw Error(ErrorKind::Conflict,
                  "cannot restart sandbox " + id.substr(0, 12) + " on its writable layer: it is still running; stop it first");
  }
  if (::mkdir(fresh.c_str(), 0700) < 0) throw_errno("create the sandbox state directory " + fresh);
  bool kept = false;
  if (opts.reuse_layer) {
    try {
      // (A --disk tmpfs is a mount point: EBUSY, the new layer starts empty.)
      kept = ::rename((dir + "/fs").c_str(), (fresh + "/fs").c_str()) == 0;
      if (!kept) log::debug("restart " + id.substr(0, 12) + ": the writable layer stays behind: " + std::strerror(errno));
      int fd = ::open((dir + "/userns").c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        char buf[16] = {};
        if (::read(fd, buf, sizeof buf - 1) > 0) old_slot = std::atoi(buf);
        ::close(fd);
      }
      remove_sandbox(run_root, id, true);
    } catch (...) {
      remove_tree(fresh);
      throw;
    }
  }
  SandboxState st;
  try {
    // Writes land on disk, in the state dir, where snapshots can read them.
    spec.upper_dir = dir + "/fs";
    if (!kept) fs::mkdir_p(fresh + "/fs", 0700);
    if (spec.disk_bytes && !kept) mount_disk_tmpfs(fresh + "/fs", spec.disk_bytes);
    write_config(fresh, spec);
    st = creating_state(spec);
    write_state(fresh, st);
    crash_point("create-dir");
    if (::rename(fresh.c_str(), dir.c_str()) < 0) throw_errno("rename " + fresh + " to " + dir);
  } catch (...) {
    remove_tree(fresh);  // detaches the --disk tmpfs too
    throw;
  }
  crash_point("create-state");
  // Until sb.commit() the sandbox dies with this sbx (Sandbox::commit_fd): a
  // create killed at any moment before state.json says "running" leaves no
  // live sandbox behind.
  Sandbox sb;
  start_created(run_root, id, [&] {
    if (opts.userns) {
      // The range is taken once the dir has its id (allocate_id_range counts
      // only those) and recorded in config.json as linux.uidMappings, where
      // `cp` and `snapshot` read the sandbox's owners from.
      IdPool pool = id_pool();
      IdRange r = allocate_id_range(run_root, id, pool, kept ? old_slot : -1);
      // A kept layer whose range went to another sandbox meanwhile: its files move to the new range.
      if (kept && old_slot >= 0 && r.slot != old_slot)
        shift_ids(dir + "/fs", pool.start + static_cast<uint32_t>(old_slot) * kIdRangeSize, r.host_start);
      spec.uid_mappings = spec.gid_mappings = id_maps(r);
      write_config(dir, spec);
    }
    // Claimed before anything starts: two creates with one name cannot both win.
    if (!spec.name.empty()) claim_name(run_root, spec.name, id);
    crash_point("create-name");

    StartOptions so;
    so.run_root = run_root;
    so.detached = true;
    so.state_template = &st;
    so.userns = opts.userns;
    so.detached_stdin = opts.stdin_fd;
    so.gc_stale = opts.gc_stale;
    sb = start(spec, so);  // state.json now names its init and cgroups
  }, [&] { sb.release(); /* commits: state.json says "running" */ });
  return id;
}

}  // namespace sbx::runtime
