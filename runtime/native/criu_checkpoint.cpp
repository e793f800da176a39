#include "runtime/native/criu_checkpoint.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/runtime_config.h"
#include "runtime/lifecycle.h"
#include "runtime/linux/cgroup_freeze.h"
#include "runtime/linux/cgroups.h"
#include "runtime/linux/clone_child.h"  // other_threads_exist
#include "runtime/linux/run_command.h"
#include "runtime/linux/mountinfo.h"
#include "runtime/linux/sandbox_freezer.h"
#include "runtime/native/criu.h"
#include "runtime/native/holder.h"
#include "runtime/native/init_binary.h"
#include "runtime/native/native.h"

namespace sbx::runtime {

namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

/// The last `n` bytes of a log, for a message: fs::read_tail, or what it
/// was when there is nothing to quote.
std::string read_tail(const std::string& path, size_t n) {
  std::string tail = fs::read_tail(path, n);
  return tail.empty() ? "(nothing in " + path + ")" : tail;
}

/// The error lines of a CRIU log (else its tail), for messages.
std::string criu_errors(const std::string& log) {
  std::string all = read_tail(log, 200000), out;
  std::istringstream in(all);
  std::string line;
  while (std::getline(in, line))
    if (line.find("Error") != std::string::npos && line.find("RLIMIT_NOFILE") == std::string::npos) out += line + "\n";
  if (out.empty()) out = read_tail(log, 1500);
  if (out.size() > 2000) out = out.substr(out.size() - 2000);
  return out;
}

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}

/// The root of the cgroup hierarchy holding `cg` (the last parent that is a cgroup).
std::string hierarchy_root(const std::string& cg) {
  std::string d = cg;
  for (;;) {
    auto slash = d.rfind('/');
    if (slash == std::string::npos || slash == 0) return d;
    std::string up = d.substr(0, slash);
    if (!fs::exists(up + "/cgroup.procs")) return d;
    d = up;
  }
}

void move_to(const std::string& cg, pid_t pid) {
  fs::write_existing(cg + "/cgroup.procs", std::to_string(pid));
}

/// Makes the holder `pid` dumpable (or not) while every other process of its
/// sandbox stays frozen in `freezer`: the holder alone leaves the frozen
/// cgroup for its hierarchy's root (which thaws it), obeys the signal, and
/// goes back (frozen again). Waits (≤ 2 s) until /proc/PID's owner says the
/// holder obeyed: the task's uid when dumpable, root when not.
void set_holder_dumpable(pid_t pid, const std::string& freezer, bool on) {
  const std::string root = hierarchy_root(freezer);
  move_to(root, pid);
  bool ok = false;
  try {
    union sigval v;
    v.sival_int = on ? 1 : 0;
    if (::sigqueue(pid, holder_dumpable_signal(), v) < 0) throw_errno("signal the holder (pid " + std::to_string(pid) + ")");
    for (int i = 0; i < 400 && !ok; ++i) {
      struct stat st;
      if (::stat(("/proc/" + std::to_string(pid)).c_str(), &st) < 0) throw_errno("stat /proc/" + std::to_string(pid));
      ok = on ? st.st_uid != 0 : st.st_uid == 0;
      if (!ok) ::usleep(5000);
    }
  } catch (...) {
    move_to(freezer, pid);
    throw;
  }
  move_to(freezer, pid);
  for (int i = 0; i < 400 && !cgroup_frozen(freezer); ++i) ::usleep(5000);
  if (!ok)
    throw Error(std::string("the sandbox's init (pid ") + std::to_string(pid) + ") did not become " +
                (on ? "dumpable" : "non-dumpable") + " when asked (was it started by an older sbx?)");
}

/// What of the holder's mounts and fds lies outside the sandbox, as CRIU's
/// externals (see the header).
struct Externals {
  std::map<std::string, std::string> mounts;  ///< KEY -> host path (restore: --external mnt[KEY]:PATH)
  std::vector<std::string> dump_args;         ///< --external … for criu dump
  std::map<std::string, std::string> files;   ///< "state"/"log" -> file[MNT:INO]
};

Externals find_externals(pid_t pid, const std::string& state_dir) {
  Externals e;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::vector<MountInfoLine> inside = read_mountinfo(pid);
  std::vector<MountInfoLine> host = read_mountinfo(0);
  std::set<std::string> whole;  // file systems the sandbox holds from their root
  std::set<int> ids;
  for (const auto& m : inside) {
    ids.insert(m.id);
    if (m.root == "/") whole.insert(m.dev);
  }
  int n = 0;
  for (const auto& m : inside) {
    if (m.root == "/" || whole.count(m.dev)) continue;
    // A bind of something the sandbox does not hold: where it is on the host.
    std::string best;
    size_t best_len = 0;
    for (const auto& h : host) {
      if (h.dev != m.dev) continue;
      const std::string r = h.root == "/" ? "" : h.root;
      if (m.root.compare(0, r.size(), r) != 0 || (m.root.size() > r.size() && m.root[r.size()] != '/')) continue;
      if (best.empty() || r.size() >= best_len) {
        best = (h.point == "/" ? "" : h.point) + m.root.substr(r.size());
        best_len = r.size();
      }
    }
    if (best.empty())
      throw Error("cannot checkpoint: " + m.point + " in the sandbox is a bind mount of " + m.root + " (device " + m.dev +
                  "), which is not mounted on the host");
    const std::string key = "sbx-m" + std::to_string(n++);
    e.mounts[key] = best;
    e.dump_args.push_back("--external");
    e.dump_args.push_back("mnt[" + m.point + "]:" + key);
  }
  // The holder's fds of files on mounts outside its mount namespace: the
  // state dir and its log.
  std::error_code ec;
  for (const auto& de : std::filesystem::directory_iterator(proc + "/fd", ec)) {
    const std::string ent = de.path().filename().string();
    const std::string fdp = proc + "/fd/" + ent;
    char buf[4096];
    ssize_t n = ::readlink(fdp.c_str(), buf, sizeof buf - 1);
    if (n <= 0) continue;
    const std::string target(buf, static_cast<size_t>(n));
    if (target[0] != '/') continue;
    int mnt = -1;
    std::istringstream info(fs::read_file(proc + "/fdinfo/" + ent));
    std::string k;
    while (info >> k)
      if (k == "mnt_id:") info >> mnt;
    if (ids.count(mnt)) continue;  // on a mount of the sandbox: CRIU restores it
    struct stat st;
    if (::stat(fdp.c_str(), &st) < 0) throw_errno("stat " + fdp);
    const std::string key = "file[" + hex(static_cast<uint64_t>(mnt)) + ":" + hex(st.st_ino) + "]";
    std::string role;
    if (S_ISDIR(st.st_mode) && target == state_dir) role = "state";
    else if (target == state_dir + "/" + kRecordLog) role = "log";
    else
      throw Error("cannot checkpoint: the sandbox's init holds " + target +
                  " from the host, which sbx does not know how to give back at restore");
    e.files[role] = key;
    e.dump_args.push_back("--external");
    e.dump_args.push_back(key);
  }
  return e;
}

/// The image's layers, top first, from the overlay at the sandbox's "/".
std::vector<std::string> lower_dirs(pid_t pid) {
  for (const auto& m : read_mountinfo(pid)) {
    if (m.point != "/" || m.fstype != "overlay") continue;
    std::vector<std::string> out;
    std::istringstream o(m.super_options);
    std::string opt;
    while (std::getline(o, opt, ',')) {
      if (opt.rfind("lowerdir+=", 0) == 0) out.push_back(opt.substr(10));
      else if (opt.rfind("lowerdir=", 0) == 0) {
        std::istringstream l(opt.substr(9));
        std::string d;
        while (std::getline(l, d, ':')) out.push_back(d);
      }
    }
    for (const auto& d : out)
      if (d.empty() || d[0] != '/' || d.rfind("/proc/", 0) == 0 || !fs::exists(d))
        throw Error("cannot checkpoint: the sandbox's root overlay names layer '" + d + "', which is not a host path");
    if (!out.empty()) return out;
  }
  throw Error("cannot checkpoint: the sandbox's root is not an overlay of image layers");
}

void copy_tree(const std::string& from, const std::string& to, const std::string& log) {
  int code = run_logged({"/bin/cp", "-a", "--reflink=auto", from, to}, log);
  if (code != 0) throw Error("copy " + from + " to " + to + " failed: " + read_tail(log, 1000));
}

}  // namespace

void refuse_native_checkpoint(const SandboxState& st, const SandboxSpec& spec) {
  const std::string who = "cannot checkpoint sandbox " + st.id.substr(0, 12) + ": ";
  const std::string tail = "; nothing was written and the sandbox keeps running";
  if (std::string why = criu_spec_blocker(spec); !why.empty()) throw Error(who + why + tail);
  const CriuInfo& i = criu_info();
  if (i.path.empty() || !i.works) fail_native_checkpoint();
  if (spec.network == NetworkMode::Private || spec.network == NetworkMode::User)
    throw Error(who + "it has a network of its own (--network private or a user-defined network), and restoring "
                      "a native sandbox into a new one (address, veth, rules) is not supported yet" + tail +
                ". Checkpoint a sandbox with --network none");
  if (spec.network == NetworkMode::Host)
    throw Error(who + "it shares the host's network (--network host), which CRIU cannot save or give to copies" +
                tail + ". Checkpoint a sandbox with --network none");
  if (spec.process.terminal)
    throw Error(who + "it has a terminal (-t), which sbx cannot give back to a restored copy yet" + tail);
  for (const auto& m : spec.mounts)
    if (m.type != "tmpfs")
      throw Error(who + "it has a volume or bind mount (" + m.destination +
                  "), which a restored copy could not share safely yet" + tail);
  if (!spec.uid_mappings.empty())
    throw Error(who + "it runs in a user namespace, and restoring one (a fresh id range, idmapped image layers "
                      "for the copy's overlay) is not implemented yet" + tail +
                ". Checkpoint a sandbox created with --userns host");
}

CheckpointResult checkpoint_native(const std::string& run_root, const SandboxState& st, const SandboxSpec& spec,
                                   const CheckpointRequest& req) {
  refuse_native_checkpoint(st, spec);
  const std::string sdir = sandbox_dir(run_root, st.id);
  const pid_t pid = st.pid;
  const bool userns = !spec.uid_mappings.empty();
  CheckpointResult res;
  res.image = st.image_id.empty() ? st.image_ref : st.image_id;
  std::vector<std::string> layers = lower_dirs(pid);  // before anything is written
  fs::mkdir_p(req.dir + "/image", 0700);
  bool dumpable = false;
  std::string freezer;
  try {
    auto f = sandbox_freezer(sdir);
    if (!f || f->cgroups.empty())
      throw Error(ErrorKind::Conflict, "sandbox " + st.id.substr(0, 12) + " is not running");
    freezer = f->cgroups[0];
    CgroupFreeze frozen(f->cgroups, std::chrono::milliseconds(5000), f->members);
    if (userns) {
      set_holder_dumpable(pid, freezer, true);
      dumpable = true;
    }
    Externals ext = find_externals(pid, sdir);
    if (!ext.files.count("state"))
      throw Error("cannot checkpoint sandbox " + st.id.substr(0, 12) + ": its init holds no state dir fd");
    copy_tree(sdir + "/fs/upper", req.dir + "/upper", req.dir + "/copy.log");
    std::vector<std::string> argv = {criu_info().path, "dump", "-t", std::to_string(pid), "-D", req.dir + "/image",
                                     "-o", "dump.log", "--freeze-cgroup", freezer, "--leave-running"};
    argv.insert(argv.end(), ext.dump_args.begin(), ext.dump_args.end());
    int code = run_logged(argv, req.dir + "/criu.out");
    if (code != 0)
      throw Error("criu dump of sandbox " + st.id.substr(0, 12) + " failed (exit " + std::to_string(code) +
                  "): " + criu_errors(req.dir + "/image/dump.log"));
    if (!req.leave_running) ::kill(pid, SIGKILL);  // dies at the thaw, with all of it
    if (dumpable) {
      set_holder_dumpable(pid, freezer, false);
      dumpable = false;
    }
    frozen.thaw();
    fs::write_file_atomic(req.dir + "/config.json", fs::read_file(sdir + "/config.json"), 0600);
    json meta = {{"lower_dirs", layers},  {"mounts", ext.mounts},     {"files", ext.files},
                 {"image", st.image_id}, {"image_ref", st.image_ref}, {"command", st.command},
                 {"userns", userns},     {"sandbox", st.id}};
    fs::write_file_atomic(req.dir + "/meta.json", meta.dump(2), 0600);
    ::unlink((req.dir + "/criu.out").c_str());
    ::unlink((req.dir + "/copy.log").c_str());
  } catch (...) {
    if (dumpable) {
      try {
        set_holder_dumpable(pid, freezer, false);
      } catch (const Error& e) {
        log::warn(std::string("checkpoint: ") + e.what() + "; killing the sandbox rather than leave it dumpable");
        ::kill(pid, SIGKILL);
      }
    }
    if (int e = remove_tree(req.dir)) log::warn("remove " + req.dir + ": " + std::strerror(e));
    throw;
  }
  if (!req.leave_running) {
    // The holder was killed, so it records no end: say why it ended.
    for (int i = 0; i < 400 && state_alive(st); ++i) ::usleep(5000);
  }
  return res;
}

namespace {

/// Runs `argv` (criu restore) in the cgroups `cgroups`, with `state_fd` and
/// `log_fd` as its fds 100 and 101, its output appended to `out`. Returns
/// its exit code.
int run_criu_restore(const std::vector<std::string>& argv, const std::vector<std::string>& cgroups, int state_fd,
                     int log_fd, const std::string& out) {
  std::vector<std::string> procs;
  for (const auto& c : cgroups) procs.push_back(c + "/cgroup.procs");
  std::vector<char*> av;
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  int ofd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (ofd < 0) throw_errno("open " + out);
  pid_t child = ::fork();
  if (child < 0) {
    ::close(ofd);
    throw_errno("fork criu");
  }
  if (child == 0) {
    for (const auto& p : procs) {
      int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(120);
      ::close(fd);
    }
    int nul = ::open("/dev/null", O_RDONLY);
    if (nul < 0 || ::dup2(nul, 0) < 0 || ::dup2(ofd, 1) < 0 || ::dup2(ofd, 2) < 0) ::_exit(121);
    if (::dup2(state_fd, 100) < 0 || ::dup2(log_fd, 101) < 0) ::_exit(122);
    ::execv(av[0], av.data());
    ::_exit(127);
  }
  ::close(ofd);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::vector<RestoredSandbox> restore_native(const std::string& run_root, const RestoreRequest& req) {
  if (req.count < 1 || req.count > 4096)
    throw Error(ErrorKind::InvalidArgument, "--count must be between 1 and 4096");
  const std::string& cdir = req.dir;
  const std::string& name = req.snapshot;
  json meta, config;
  std::vector<std::string> layers;
  std::map<std::string, std::string> mounts, files;
  try {
    meta = json::parse(fs::read_file(cdir + "/meta.json"));
    config = json::parse(fs::read_file(cdir + "/config.json"));
    layers = meta.at("lower_dirs").get<std::vector<std::string>>();
    mounts = meta.at("mounts").get<std::map<std::string, std::string>>();
    files = meta.at("files").get<std::map<std::string, std::string>>();
  } catch (const std::exception& e) {
    throw Error("memory snapshot '" + name + "' in " + cdir + " is corrupt (" + e.what() +
                "); remove it with 'sbx snapshots rm " + name + "'");
  }
  if (!fs::exists(cdir + "/image/inventory.img") || !fs::exists(cdir + "/upper"))
    throw Error("memory snapshot '" + name + "' in " + cdir + " is corrupt (no CRIU inventory or writable layer); remove it with 'sbx snapshots rm " +
                name + "'");
  if (meta.value("userns", false))
    throw Error("memory snapshot '" + name + "' is of a sandbox in a user namespace, which sbx cannot restore yet");
  if (layers.empty() || !files.count("state"))
    throw Error("memory snapshot '" + name + "' in " + cdir + " is corrupt (no layers or state fd recorded)");
  for (const auto& l : layers)
    if (!fs::exists(l)) throw Error("memory snapshot '" + name + "' needs image layer " + l + ", which is gone (was the image removed?)");
  {
    int fd = open_init_binary(run_root);  // the /dev/.sbx-init bind's source exists
    ::close(fd);
  }
  Resources limits;
  try {
    limits = oci::from_runtime_config(config.dump()).resources;
  } catch (const Error& e) {
    throw Error("memory snapshot '" + name + "': its config.json cannot be read (" + e.what() + ")");
  }
  std::string lowers;
  for (const auto& l : layers) lowers += (lowers.empty() ? "" : ":") + l;

  std::vector<RestoredSandbox> out;
  fs::mkdir_p(run_root, 0700);
  try {
    for (int i = 0; i < req.count; ++i) {
      const auto t0 = clock_type::now();
      const std::string nm = req.name.empty() ? "" : req.count == 1 ? req.name : req.name + "-" + std::to_string(i + 1);
      RestoredSandbox s;
      s.id = new_sandbox_id();
      s.dir = sandbox_dir(run_root, s.id);
      s.output = s.dir + "/" + kRecordLog;
      json c = config;
      c["root"]["path"] = s.dir + "/fs/upper";
      SandboxState st;
      st.id = s.id;
      st.name = nm;
      st.image_id = meta.value("image", "");
      st.image_ref = meta.value("image_ref", "");
      st.runtime = NativeBackend::kName;
      st.status = "creating";
      st.created_ms = now_ms();
      st.labels = {{"sbx.restored-from", name}};
      st.command = meta.value("command", std::vector<std::string>{});
      st.creator_pid = ::getpid();
      st.creator_start = process_start_time(::getpid());
      st.creator_shared = other_threads_exist();
      const std::string fresh = run_root + "/.new-" + s.id;
      if (::mkdir(fresh.c_str(), 0700) < 0) throw_errno("create the sandbox state directory " + fresh);
      try {
        fs::mkdir_p(fresh + "/fs", 0700);
        fs::mkdir_p(fresh + "/fs/work", 0700);
        fs::mkdir_p(fresh + "/mnt", 0700);
        copy_tree(cdir + "/upper", fresh + "/fs/upper", fresh + "/copy.log");
        ::unlink((fresh + "/copy.log").c_str());
        fs::write_file_atomic(fresh + "/config.json", c.dump(2), 0600);
        write_state(fresh, st);
        if (::rename(fresh.c_str(), s.dir.c_str()) < 0) throw_errno("rename " + fresh + " to " + s.dir);
      } catch (...) {
        remove_tree(fresh);
        throw;
      }
      out.push_back(s);  // from here on, a failure removes it with the others
      if (!st.name.empty()) claim_name(run_root, st.name, s.id);
      {
        Cgroup cg = Cgroup::create(s.id, limits);
        st.cgroups = cg.paths();
        cg.release();  // state.json names it; rm (and a failure here) removes it
      }
      write_state(s.dir, st);
      const std::string mnt = s.dir + "/mnt";
      const std::string data = "lowerdir=" + lowers + ",upperdir=" + s.dir + "/fs/upper,workdir=" + s.dir + "/fs/work";
      if (::mount("none", mnt.c_str(), "overlay", 0, data.c_str()) < 0) throw_errno("mount overlay on " + mnt);
      ::mount(nullptr, mnt.c_str(), nullptr, MS_PRIVATE, nullptr);
      int state_fd = ::open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (state_fd < 0) throw_errno("open " + s.dir);
      struct open_how how {};
      how.flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC;
      how.mode = 0600;
      how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
      int log_fd = static_cast<int>(::syscall(SYS_openat2, state_fd, kRecordLog, &how, sizeof how));
      if (log_fd < 0) {
        int e = errno;
        ::close(state_fd);
        throw_errno("open " + s.output, e);
      }
      std::vector<std::string> argv = {criu_info().path, "restore", "-D", cdir + "/image", "-W", s.dir,
                                       "-o", "restore.log", "-d", "--root", mnt, "--pidfile", s.dir + "/criu.pid",
                                       "--manage-cgroups=ignore"};
      for (const auto& [key, host] : mounts) argv.insert(argv.end(), {"--external", "mnt[" + key + "]:" + host});
      argv.insert(argv.end(), {"--inherit-fd", "fd[100]:" + files.at("state")});
      if (files.count("log")) argv.insert(argv.end(), {"--inherit-fd", "fd[101]:" + files.at("log")});
      int code = run_criu_restore(argv, st.cgroups, state_fd, log_fd, s.dir + "/criu.out");
      ::close(state_fd);
      ::close(log_fd);
      ::umount2(mnt.c_str(), MNT_DETACH);  // the copy's mount namespace holds its own
      if (code != 0)
        throw Error("criu restore failed (exit " + std::to_string(code) + "): " + criu_errors(s.dir + "/restore.log") +
                    read_tail(s.dir + "/criu.out", 500));
      pid_t pid = 0;
      try {
        pid = static_cast<pid_t>(std::stol(fs::read_file(s.dir + "/criu.pid")));
      } catch (const std::exception&) {
        throw Error("criu restore wrote no pid file in " + s.dir);
      }
      // CRIU restores the holder's dumpable flag as dumped; ask it once more
      // to be non-dumpable, so no copy's /proc/1 opens to its sandbox even
      // if the checkpoint was taken while it was dumpable.
      union sigval off;
      off.sival_int = 0;
      ::sigqueue(pid, holder_dumpable_signal(), off);
      st.pid = pid;
      st.pid_start = process_start_time(pid);
      st.status = "running";
      st.started_ms = now_ms();
      write_state(s.dir, st);
      for (const char* f : {"criu.pid", "criu.out"}) ::unlink((s.dir + "/" + f).c_str());
      out.back().pid = pid;
      out.back().restore_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    }
  } catch (const Error& e) {
    for (const auto& s : out) {
      try {
        remove_sandbox(run_root, s.id, true);
      } catch (const Error& e2) {
        log::warn(std::string("remove restored sandbox: ") + e2.what() + "; 'sbx gc' will retry");
      }
    }
    throw Error(e, "restore of memory snapshot '" + name + "' failed: " + e.what() +
                       (out.empty() ? "" : " (the copies started so far were removed)"));
  }
  return out;
}

}  // namespace sbx::runtime
