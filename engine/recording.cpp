// Engine: recording a sandbox's steps into its trajectory (engine/trajectory.h).
// An exec of a recorded sandbox runs with its stdout and stderr (and stdin,
// when it has one) through pipes that a pump thread copies to where they
// were going, hashing them and keeping their first bytes; after the step,
// the writable layer's changes become the step's checkpoint.
#include "engine/recording.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/auth_config.h"
#include "oci/digest.h"
#include "engine/trajectory.h"
#include "runtime/backends.h"
#include "runtime/state.h"

namespace sbx::engine::trajectory {

using json = nlohmann::json;

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A stream as a step keeps it: size, sha256 of the whole, the first bytes.
struct Capture {
  oci::Sha256 hash;
  std::string head;
  void add(const char* p, size_t n) {
    hash.update(p, n);
    if (head.size() < kStreamBound) head.append(p, std::min(n, kStreamBound - head.size()));
  }
  json to_json() {
    uint64_t size = hash.size();
    json j = {{"size", size}, {"sha256", hash.hex()}, {"data_b64", oci::base64_encode(head)}};
    j["truncated"] = size > head.size();
    return j;
  }
};

void write_all_fd(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // the reader went away: the command's output goes on being recorded
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void set_nonblock(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

/// Holds the trajectory's lock (flock on DIR/lock) while a step is numbered,
/// checkpointed and appended, so concurrent steps get distinct numbers and
/// each checkpoint is against the one before.
class StepLock {
 public:
  explicit StepLock(const std::string& tdir) : fd_(::open((tdir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_.fd < 0) throw Error("cannot open " + tdir + "/lock", errno);
    while (::flock(fd_.fd, LOCK_EX) != 0)
      if (errno != EINTR) throw Error("cannot lock " + tdir + "/lock", errno);
  }

 private:
  Fd fd_;
};

/// The next step's number. DIR/seq ("N SIZE": the last step and the
/// trajectory's size after it) saves reading the file; when the size does
/// not match (seq lost in a crash: it is not fsync'd) the lines are counted.
int next_step(const std::string& tdir, uint64_t size) {
  std::string f = tdir + "/seq";
  try {
    std::string t = fs::read_file(f);
    auto sp = t.find(' ');
    if (sp != std::string::npos && std::stoull(t.substr(sp + 1)) == size) return std::stoi(t.substr(0, sp)) + 1;
  } catch (const std::exception&) {
    // Missing or unreadable: counted below.
  }
  std::string text = fs::read_file(tdir + "/trajectory.jsonl");
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));  // the header is line 1
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error("cannot stat " + path, errno);
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

void Recorder::append(json step, bool state_may_change) {
  StepLock lock(tdir_);
  if (state_may_change) {
    try {
      std::string up = upper_dir();
      auto t0 = std::chrono::steady_clock::now();
      step["checkpoint"] = checkpoint_upper(tdir_, up);
      step["checkpoint_ms"] = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count() / 1000.0;
    } catch (const Error& e) {
      step["checkpoint"] = nullptr;
      step["not_restorable"] = e.what();
    }
  }
  std::string file = tdir_ + "/trajectory.jsonl";
  int n = next_step(tdir_, file_size(file));
  step["step"] = n;
  const json& line = step;
  append_line(file, line);
  write_scratch_file(tdir_ + "/seq", std::to_string(n) + " " + std::to_string(file_size(file)));
}

std::string Recorder::upper_dir() {
  std::string cache = tdir_ + "/upper_dir";
  if (fs::exists(cache)) return fs::read_file(cache);
  std::string up = upper_();  // throws: no writable layer on the host (gVisor)
  write_scratch_file(cache, up);
  return up;
}

int Recorder::exec(const runtime::ExecRequest& req, const std::function<int(const runtime::ExecRequest&)>& run,
                   bool* timed_out) {
  json step = {{"kind", "exec"},
               {"argv", req.args},
               {"env", env_json(req.env, redact_)},
               {"workdir", req.cwd},
               {"user", req.user},
               {"tty", req.tty}};
  if (req.timeout.count() > 0) step["timeout_ms"] = req.timeout.count();
  int64_t start = now_ms();
  auto t0 = std::chrono::steady_clock::now();
  int code;
  if (req.tty) {
    // A terminal's bytes are relayed by the backend: the step keeps no output.
    code = run(req);
    step["stdout"] = nullptr;
    step["stderr"] = nullptr;
  } else {
    runtime::ExecRequest r = req;
    Pipe out("the recorded stdout"), err("the recorded stderr");
    int out_dst = req.stdout_fd >= 0 ? req.stdout_fd : 1, err_dst = req.stderr_fd >= 0 ? req.stderr_fd : 2;
    int in_src = req.stdin_fd >= 0 ? req.stdin_fd : (req.interactive ? 0 : -1);
    std::optional<Pipe> in;
    if (in_src >= 0) {
      in.emplace("the recorded stdin");
      set_nonblock(in->w.fd);
      r.stdin_fd = in->r.fd;
    }
    r.stdout_fd = out.w.fd;
    r.stderr_fd = err.w.fd;
    // Once the command's process holds the write ends, ours go: then the
    // command's exit is the pipes' EOF, and the pump ends by itself while
    // the backend reaps, instead of waking only after run() returns (two
    // more thread hand-offs at the end of every step, each a scheduling
    // delay on a busy host).
    r.on_pid = [&out, &err, caller = req.on_pid](int pid) {
      if (pid > 0) {
        out.w.reset();
        err.w.reset();
      }
      if (caller) caller(pid);
    };
    Fd stop(::eventfd(0, EFD_CLOEXEC));
    if (stop.fd < 0) throw Error("cannot create an eventfd for the recorder", errno);
    Capture cout_, cerr_, cin_;
    bool stdin_redacted = false;
    for (const auto& s : redact_)
      if (s == "stdin") stdin_redacted = true;
    std::thread pump([&] {
      std::string pending;  // stdin read but not yet written to the command
      bool in_open = in_src >= 0, out_open = true, err_open = true;
      char buf[65536];
      while (out_open || err_open) {
        pollfd p[4] = {{out.r.fd, POLLIN, 0}, {err.r.fd, POLLIN, 0}, {stop.fd, POLLIN, 0}, {-1, 0, 0}};
        if (in_open) p[3] = pending.empty() ? pollfd{in_src, POLLIN, 0} : pollfd{in->w.fd, POLLOUT, 0};
        if (!out_open) p[0].fd = -1;
        if (!err_open) p[1].fd = -1;
        if (::poll(p, 4, -1) < 0) {
          if (errno == EINTR) continue;
          break;
        }
        if (p[2].revents) break;
        for (int i = 0; i < 2; ++i)
          if (p[i].revents) {
            ssize_t n = ::read(p[i].fd, buf, sizeof buf);
            if (n <= 0) {
              (i == 0 ? out_open : err_open) = false;
              continue;
            }
            (i == 0 ? cout_ : cerr_).add(buf, static_cast<size_t>(n));
            write_all_fd(i == 0 ? out_dst : err_dst, buf, static_cast<size_t>(n));
          }
        if (in_open && p[3].revents) {
          if (pending.empty()) {
            ssize_t n = ::read(in_src, buf, sizeof buf);
            if (n <= 0) {
              in_open = false;
              in->w.reset();  // the command sees its end of input
            } else {
              cin_.add(buf, static_cast<size_t>(n));
              pending.assign(buf, static_cast<size_t>(n));
            }
          } else {
            ssize_t n = ::write(in->w.fd, pending.data(), pending.size());
            if (n > 0)
              pending.erase(0, static_cast<size_t>(n));
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
              in_open = false;  // the command closed its stdin
          }
        }
      }
      // The command ended: what it wrote is in the pipes now (a background
      // process it left holding them is not waited for).
      for (int i = 0; i < 2; ++i) {
        int fd = i == 0 ? out.r.fd : err.r.fd;
        set_nonblock(fd);
        ssize_t n;
        while ((n = ::read(fd, buf, sizeof buf)) > 0) {
          (i == 0 ? cout_ : cerr_).add(buf, static_cast<size_t>(n));
          write_all_fd(i == 0 ? out_dst : err_dst, buf, static_cast<size_t>(n));
        }
      }
    });
    try {
      code = run(r);
    } catch (...) {
      uint64_t one = 1;
      (void)!::write(stop.fd, &one, sizeof one);
      pump.join();
      throw;
    }
    out.w.reset();
    err.w.reset();
    uint64_t one = 1;
    (void)!::write(stop.fd, &one, sizeof one);
    pump.join();
    step["stdout"] = cout_.to_json();
    step["stderr"] = cerr_.to_json();
    if (in_src >= 0) {
      json sj = cin_.to_json();
      if (stdin_redacted) sj.erase("data_b64");
      step["stdin"] = sj;
    } else {
      step["stdin"] = nullptr;
    }
  }
  int64_t dur = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  bool to = code == kExitTimeout && req.timeout.count() > 0;
  if (timed_out) *timed_out = to;
  step["exit_code"] = code;
  step["end_reason"] = to ? "timeout" : code > 128 && code < 160 ? "signal" : "exited";
  step["start_ms"] = start;
  step["duration_ms"] = dur;
  try {
    append(std::move(step), true);
  } catch (const Error& e) {
    log::warn("could not record the exec step: " + std::string(e.what()));
  }
  return code;
}

std::unique_ptr<Recorder> recorder_for(const std::string& run_root, const std::string& id) {
  if (!recorded(run_root, id)) return nullptr;
  std::string tdir = dir_of(run_root, id);
  std::vector<std::string> redact;
  try {
    redact = json::parse(read_header_line(tdir + "/trajectory.jsonl")).value("redact", std::vector<std::string>{});
  } catch (const std::exception& e) {
    throw Error("sandbox " + id + ": its trajectory " + tdir + "/trajectory.jsonl has no readable header: " + e.what());
  }
  return std::make_unique<Recorder>(tdir, redact, [run_root, id] {
    auto sb = runtime::open_sandbox(run_root, id);
    runtime::BackendOptions bo;
    bo.run_root = run_root;
    return runtime::backend_for(sb.state, bo)->writable_layer(sb).upper_dir;
  });
}

void record_snapshot(const std::string& run_root, const std::string& id, const std::string& type,
                     const std::string& snapshot_id, const std::string& name) noexcept {
  try {
    if (auto rec = recorder_for(run_root, id))
      rec->append({{"kind", "snapshot"}, {"type", type}, {"id", snapshot_id}, {"name", name}}, false);
  } catch (const std::exception& e) {
    log::warn("could not record the snapshot step: " + std::string(e.what()));
  }
}

json copy_manifest(const std::string& host, const std::string& objects, bool store, uint64_t& total) {
  namespace sfs = std::filesystem;
  json files = json::array();
  std::error_code ec;
  auto add = [&](const sfs::path& p, const std::string& rel) {
    auto st = sfs::symlink_status(p, ec);
    json f = {{"path", rel}, {"mode", static_cast<unsigned>(st.permissions()) & 07777}};
    if (sfs::is_symlink(st)) {
      f["type"] = "symlink";
      f["target"] = sfs::read_symlink(p, ec).string();
    } else if (sfs::is_directory(st)) {
      f["type"] = "dir";
    } else if (sfs::is_regular_file(st)) {
      f["type"] = "file";
      uint64_t size = sfs::file_size(p, ec);
      f["size"] = size;
      total += size;
      f["sha256"] = store ? put_object_file(objects, p.string()) : oci::sha256_file_hex(p.string());
    } else {
      return;
    }
    files.push_back(f);
  };
  if (sfs::is_directory(sfs::symlink_status(host, ec))) {
    add(host, "");
    for (auto it = sfs::recursive_directory_iterator(host, ec); it != sfs::recursive_directory_iterator(); it.increment(ec))
      add(it->path(), sfs::relative(it->path(), host, ec).string());
  } else {
    add(host, "");
  }
  return files;
}

uint64_t tree_bytes(const std::string& host) {
  namespace sfs = std::filesystem;
  std::error_code ec;
  if (!sfs::is_directory(sfs::symlink_status(host, ec))) return sfs::is_regular_file(host, ec) ? sfs::file_size(host, ec) : 0;
  uint64_t n = 0;
  for (auto it = sfs::recursive_directory_iterator(host, ec); it != sfs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) n += it->file_size(ec);
  return n;
}

}  // namespace sbx::engine::trajectory
