// runtime/state (state dirs, names, liveness) and runtime/holder (the init of
// created sandboxes), on the real kernel. The holder runs as pid 1 of a fresh
// pid namespace (it kill(-1)s at the end: never run it outside one).
#include <doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/lifecycle.h"
#include "runtime/native/holder.h"
#include "runtime/state.h"
#include "test_util.h"

using namespace sbx;
using namespace sbx::runtime;

using sbx::test::TempDir;
using sbx::test::fake_id;

namespace {

SandboxState make_state(const std::string& id) {
  SandboxState st;
  st.id = id;
  st.name = "n-" + id.substr(0, 4);
  st.image_id = "img";
  st.status = "running";
  st.created_ms = now_ms();
  st.labels = {{"a", "1"}};
  st.command = {"sleep", "1"};
  return st;
}

}  // namespace

TEST_CASE("state.json round-trips every field") {
  TempDir t;
  SandboxState st = make_state(fake_id('a'));
  st.pid = 42;
  st.pid_start = 99;
  st.cgroups = {"/sys/fs/cgroup/x"};
  st.timeout_ms = 1500;
  st.idle_timeout_ms = 700;
  st.runtime = "gvisor";
  st.owner_pid = 43;
  st.owner_start = 98;
  st.creator_shared = true;
  write_state(t.path, st);
  SandboxState r = read_state(t.path);
  CHECK(r.id == st.id);
  CHECK(r.name == st.name);
  CHECK(r.image_id == "img");
  CHECK(r.pid == 42);
  CHECK(r.pid_start == 99);
  CHECK(r.cgroups == st.cgroups);
  CHECK(r.labels.at("a") == "1");
  CHECK(r.command == st.command);
  CHECK(r.timeout_ms == 1500);
  CHECK(r.idle_timeout_ms == 700);
  CHECK(r.runtime == "gvisor");
  CHECK(r.owner_pid == 43);
  CHECK(r.owner_start == 98);
  CHECK(r.creator_shared);
  fs::write_file_atomic(t.path + "/state.json", "{not json");
  CHECK_THROWS_AS(read_state(t.path), Error);
}

TEST_CASE("gc leaves a run's dir to its own sbx while that sbx lives, and a .trash- dir to its remover") {
  TempDir t;
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  // A `sbx run` sandbox (creator_pid 0) whose init has ended.
  SandboxState st = make_state(fake_id('b'));
  st.pid = child;
  st.pid_start = 1;
  st.owner_pid = ::getpid();
  st.owner_start = process_start_time(::getpid());
  const std::string dir = t.path + "/" + st.id;
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  write_state(dir, st);
  gc(t.path, nullptr);
  CHECK(fs::exists(dir + "/state.json"));  // its sbx is alive: it cleans up itself
  st.owner_start += 1;  // that sbx is gone (killed): a leftover now
  write_state(dir, st);
  gc(t.path, nullptr);
  CHECK_FALSE(fs::exists(dir));

  const std::string trash = t.path + "/.trash-" + fake_id('c');
  REQUIRE(::mkdir(trash.c_str(), 0700) == 0);
  fs::write_file_atomic(trash + "/f", "x");
  int fd = ::open(trash.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX) == 0);  // someone is removing it
  gc(t.path, nullptr);
  CHECK(fs::exists(trash + "/f"));
  ::close(fd);
  gc(t.path, nullptr);
  CHECK_FALSE(fs::exists(trash));
}

TEST_CASE("gc removes a created sandbox whose create died, not one whose create finished and exited") {
  TempDir t;
  pid_t creator = ::fork();
  if (creator == 0) ::_exit(0);
  ::waitpid(creator, nullptr, 0);  // the creator is gone
  SandboxState st = make_state(fake_id('d'));
  st.creator_pid = creator;
  st.creator_start = 1;
  st.pid = creator;  // its init too
  st.pid_start = 1;
  const std::string dir = t.path + "/" + st.id;
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  write_state(dir, st);  // "running": the create finished
  gc(t.path, nullptr);
  CHECK(fs::exists(dir + "/state.json"));  // an ended created sandbox waits for rm
  CHECK(inspect_dir(dir).status == "exited");
  st.status = "creating";  // the create died half-way
  write_state(dir, st);
  CHECK(read_state_settled(dir).status == "creating");
  CHECK(inspect_dir(dir).status == "dead");
  gc(t.path, nullptr);
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("rm -f of a creating sandbox kills its creator, unless the creator serves others (creator_shared)") {
  TempDir t;
  for (bool shared : {false, true}) {
    pid_t creator = ::fork();
    if (creator == 0) {
      ::pause();
      ::_exit(0);
    }
    SandboxState st = make_state(fake_id(shared ? 'e' : 'f'));
    st.status = "creating";
    st.creator_pid = creator;
    st.creator_start = process_start_time(creator);
    st.creator_shared = shared;
    const std::string dir = t.path + "/" + st.id;
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    write_state(dir, st);
    remove_sandbox(t.path, st.id, true);
    CHECK_FALSE(fs::exists(dir));
    int status = 0;
    pid_t gone = ::waitpid(creator, &status, WNOHANG);
    if (shared) {
      CHECK(gone == 0);  // still there
      ::kill(creator, SIGKILL);
      ::waitpid(creator, nullptr, 0);
    } else {
      if (gone == 0) gone = ::waitpid(creator, &status, 0);
      CHECK(gone == creator);
      CHECK(WIFSIGNALED(status));
      CHECK(WTERMSIG(status) == SIGKILL);
    }
  }
}

TEST_CASE("liveness compares pid and start time, and a zombie is dead") {
  CHECK(process_start_time(::getpid()) > 0);
  CHECK(process_start_time(0) == 0);
  CHECK(process_start_time(4194304 + 7) == 0);
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  // Until reaped the child is a zombie: dead for sbx.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(process_start_time(child) == 0);
  ::waitpid(child, nullptr, 0);

  SandboxState st;
  st.pid = ::getpid();
  st.pid_start = process_start_time(::getpid());
  CHECK(state_alive(st));
  st.pid_start += 1;  // same pid, another process (pid reuse)
  CHECK_FALSE(state_alive(st));
}

TEST_CASE("the first end record wins") {
  TempDir t;
  CHECK_FALSE(read_end(t.path));
  CHECK(write_end_if_absent(t.path, EndRecord{"timeout", 124, 9, 1000}));
  CHECK_FALSE(write_end_if_absent(t.path, EndRecord{"killed", 137, 9, 2000}));
  auto e = read_end(t.path);
  REQUIRE(e);
  CHECK(e->reason == "timeout");
  CHECK(e->exit_code == 124);
  CHECK(e->signal == 9);
  CHECK(e->ended_ms == 1000);
}

TEST_CASE("an end record's accounting fields (the holder's) are read; an older record has none") {
  TempDir t;
  fs::write_file_atomic(t.path + "/end", "exit 0 0 1000 376 71147520 4096 8192\n");
  auto e = read_end(t.path);
  REQUIRE(e);
  REQUIRE(e->usage);
  CHECK(e->usage->cpu_ms == 376);
  CHECK(e->usage->max_rss_bytes == 71147520);
  CHECK(e->usage->io_read_bytes == 4096);
  CHECK(e->usage->io_write_bytes == 8192);
  fs::write_file_atomic(t.path + "/end", "killed 137 9 2000\n");
  auto old = read_end(t.path);
  REQUIRE(old);
  CHECK(old->ended_ms == 2000);
  CHECK_FALSE(old->usage);
}

TEST_CASE("inspect_dir derives the status from the kernel, not the file") {
  TempDir t;
  std::string dir = t.path + "/" + fake_id('b');
  fs::mkdir_p(dir);
  SandboxState st = make_state(fake_id('b'));
  st.pid = ::getpid();
  st.pid_start = process_start_time(::getpid());
  write_state(dir, st);
  CHECK(inspect_dir(dir).status == "running");

  // The init is gone without a record (kill -9 from outside).
  st.pid_start += 1;
  write_state(dir, st);
  auto i = inspect_dir(dir);
  CHECK(i.status == "exited");
  REQUIRE(i.end);
  CHECK(i.end->reason == "killed");

  // Its creator died half-way.
  st.status = "creating";
  st.creator_pid = ::getpid();
  st.creator_start = process_start_time(::getpid());
  write_state(dir, st);
  CHECK(inspect_dir(dir).status == "creating");
  st.creator_start += 1;
  write_state(dir, st);
  CHECK(inspect_dir(dir).status == "dead");

  // The init recorded how it ended.
  st.status = "running";
  write_state(dir, st);
  write_end_if_absent(dir, EndRecord{"idle", 124, 9, 0});
  i = inspect_dir(dir);
  CHECK(i.status == "exited");
  CHECK(i.end->reason == "idle");
}

TEST_CASE("ids resolve by full id, unique prefix and name") {
  TempDir t;
  for (const auto& id : {"ab" + std::string(62, '1'), "ab" + std::string(62, '2'), "cd" + std::string(62, '3')}) {
    fs::mkdir_p(sandbox_dir(t.path, id));
    write_state(sandbox_dir(t.path, id), make_state(id));
  }
  fs::mkdir_p(t.path + "/not-a-sandbox");
  CHECK(list_ids(t.path).size() == 3);
  CHECK(resolve_id(t.path, "cd") == "cd" + std::string(62, '3'));
  CHECK(resolve_id(t.path, "ab" + std::string(62, '2')) == "ab" + std::string(62, '2'));
  CHECK_THROWS_WITH_AS(resolve_id(t.path, "ab"), doctest::Contains("ambiguous"), Error);
  CHECK_THROWS_WITH_AS(resolve_id(t.path, "ef"), doctest::Contains("no such sandbox"), Error);

  claim_name(t.path, "web", "cd" + std::string(62, '3'));
  CHECK(resolve_id(t.path, "web") == "cd" + std::string(62, '3'));
  CHECK_THROWS_WITH_AS(claim_name(t.path, "web", "ab" + std::string(62, '1')), doctest::Contains("already used"), Error);
  CHECK_THROWS_AS(claim_name(t.path, "../x", "ab" + std::string(62, '1')), Error);
  CHECK_THROWS_AS(claim_name(t.path, "-x", "ab" + std::string(62, '1')), Error);
  // A name whose sandbox is gone is reclaimed.
  remove_tree(sandbox_dir(t.path, "cd" + std::string(62, '3')));
  claim_name(t.path, "web", "ab" + std::string(62, '1'));
  CHECK(resolve_id(t.path, "web") == "ab" + std::string(62, '1'));
  release_name(t.path, "web", "cd" + std::string(62, '3'));  // not its owner: kept
  CHECK(fs::exists(t.path + "/.names/web"));
  release_name(t.path, "web", "ab" + std::string(62, '1'));
  CHECK_FALSE(fs::exists(t.path + "/.names/web"));
}

TEST_CASE("remove_tree never follows a symlink out of the tree") {
  TempDir t;
  fs::mkdir_p(t.path + "/outside/keep");
  fs::write_file_atomic(t.path + "/outside/keep/file", "x");
  fs::mkdir_p(t.path + "/tree/a/b");
  fs::write_file_atomic(t.path + "/tree/a/b/f", "y");
  REQUIRE(::symlink((t.path + "/outside").c_str(), (t.path + "/tree/a/link").c_str()) == 0);
  REQUIRE(::symlink((t.path + "/outside/keep/file").c_str(), (t.path + "/tree/flink").c_str()) == 0);
  CHECK(remove_tree(t.path + "/tree") == 0);
  CHECK_FALSE(fs::exists(t.path + "/tree"));
  CHECK(fs::exists(t.path + "/outside/keep/file"));
  CHECK(remove_tree(t.path + "/tree") == 0);  // idempotent
}

namespace {

// Runs the holder as pid 1 of a new pid namespace; returns its wait status.
// `workload_cmd`: a shell command for the first process ("" : hold only).
struct HolderRun {
  pid_t outer = -1;
};

pid_t start_holder(const std::string& dir, const std::string& workload_cmd, int64_t timeout_ms, int64_t idle_ms) {
  pid_t outer = ::fork();
  REQUIRE(outer >= 0);
  if (outer == 0) {
    if (::unshare(CLONE_NEWPID) < 0) ::_exit(99);
    pid_t init = ::fork();  // pid 1 of the new namespace
    if (init < 0) ::_exit(98);
    if (init > 0) {
      int st;
      ::waitpid(init, &st, 0);
      ::_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
    int dirfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int p[2], e[2];
    if (::pipe2(p, O_CLOEXEC) < 0 || ::pipe2(e, O_CLOEXEC) < 0) ::_exit(97);
    pid_t w = -1;
    if (!workload_cmd.empty()) {
      w = ::fork();
      if (w == 0) {
        ::dup2(p[1], 1);
        ::dup2(e[1], 2);
        ::execl("/bin/sh", "sh", "-c", workload_cmd.c_str(), nullptr);
        ::_exit(127);
      }
    }
    ::close(p[1]);
    ::close(e[1]);
    HolderConfig cfg;
    cfg.state_dirfd = dirfd;
    cfg.workload = w;
    cfg.log_fd = p[0];
    cfg.err_fd = e[0];
    cfg.timeout_ms = timeout_ms;
    cfg.idle_timeout_ms = idle_ms;
    run_holder(cfg);
  }
  return outer;
}

int wait_exit(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace

TEST_CASE("holder: the first process's exit code and output are recorded") {
  TempDir t;
  pid_t h = start_holder(t.path, "echo hello; echo err >&2; exit 3", 0, 0);
  CHECK(wait_exit(h) == 3);
  auto e = read_end(t.path);
  REQUIRE(e);
  CHECK(e->reason == "exit");
  CHECK(e->exit_code == 3);
  std::string log = fs::read_file(t.path + "/ctr.log");
  CHECK(log.find(" stdout F hello\n") != std::string::npos);
  CHECK(log.find(" stderr F err\n") != std::string::npos);
  // Read back as records: each keeps its stream and a time.
  std::string out, err;
  read_log_records(t.path, false, [&](const LogRecord& r) {
    CHECK(r.time_ns > 0);
    (r.stream == kStderr ? err : out) += r.text;
  });
  CHECK(out == "hello\n");
  CHECK(err == "err\n");
}

TEST_CASE("holder: a signal ending the first process is recorded") {
  TempDir t;
  pid_t h = start_holder(t.path, "kill -TERM $$", 0, 0);
  CHECK(wait_exit(h) == 128 + SIGTERM);
  auto e = read_end(t.path);
  REQUIRE(e);
  CHECK(e->reason == "signal");
  CHECK(e->signal == SIGTERM);
}

TEST_CASE("holder: --timeout kills everything and says so") {
  TempDir t;
  auto t0 = std::chrono::steady_clock::now();
  pid_t h = start_holder(t.path, "sleep 30 & sleep 30", 300, 0);
  CHECK(wait_exit(h) == 124);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms >= 300);
  CHECK(ms < 5000);
  auto e = read_end(t.path);
  REQUIRE(e);
  CHECK(e->reason == "timeout");
}

TEST_CASE("holder: --idle-timeout counts from the last activity") {
  TempDir t;
  auto t0 = std::chrono::steady_clock::now();
  pid_t h = start_holder(t.path, "", 0, 400);
  // Keep it busy for ~1 s, then let it go idle.
  for (int i = 0; i < 10; ++i) {
    touch_activity(t.path.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK_FALSE(read_end(t.path));
  CHECK(wait_exit(h) == 124);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  // (last touch at >= 900 ms + 400 ms idle; the activity file's mtime comes
  // from the kernel's coarse clock, up to a tick (<= 10 ms) behind.)
  CHECK(ms >= 1290);
  auto e = read_end(t.path);
  REQUIRE(e);
  CHECK(e->reason == "idle");
}

TEST_CASE("holder: hold-only ends on SIGTERM, and rotates its log") {
  TempDir t;
  pid_t h = start_holder(t.path, "", 0, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // The outer waiter forwards nothing: signal the holder (its only child).
  std::string children = fs::read_file("/proc/" + std::to_string(h) + "/task/" + std::to_string(h) + "/children");
  pid_t holder = std::atoi(children.c_str());
  REQUIRE(holder > 0);
  ::kill(holder, SIGTERM);
  CHECK(wait_exit(h) == 128 + SIGTERM);
  CHECK(read_end(t.path)->reason == "signal");

  TempDir t2;
  // 1.5 MiB of output: log.1 and log, each bounded.
  pid_t h2 = start_holder(t2.path, "i=0; while [ $i -lt 1536 ]; do head -c 1024 /dev/zero | tr '\\0' x; i=$((i+1)); done", 0, 0);
  CHECK(wait_exit(h2) == 0);
  struct stat a {}, b {};
  REQUIRE(::stat((t2.path + "/ctr.log").c_str(), &a) == 0);
  REQUIRE(::stat((t2.path + "/ctr.log.1").c_str(), &b) == 0);
  CHECK(a.st_size <= kLogRotateBytes);
  CHECK(b.st_size <= kLogRotateBytes);
  CHECK(a.st_size + b.st_size > kLogRotateBytes);
}

TEST_CASE("sandbox log: RFC 3339 times format and parse back; records parse") {
  char buf[32];
  CHECK(std::string(buf, format_rfc3339_ns(0, buf)) == "1970-01-01T00:00:00.000000000Z");
  const int64_t t = 1700000000123456789;
  CHECK(std::string(buf, format_rfc3339_ns(t, buf)) == "2023-11-14T22:13:20.123456789Z");
  int64_t ns = 0;
  CHECK(parse_time_ns("2023-11-14T22:13:20.123456789Z", ns));
  CHECK(ns == t);
  CHECK(parse_time_ns("2023-11-14T23:13:20+01:00", ns));
  CHECK(ns == 1700000000000000000);
  CHECK(parse_time_ns("1700000000.5", ns));
  CHECK(ns == 1700000000500000000);
  CHECK_FALSE(parse_time_ns("yesterday", ns));
  LogRecord r;
  REQUIRE(parse_log_record("2023-11-14T22:13:20.123456789Z stderr P abc\n", r));
  CHECK(r.stream == kStderr);
  CHECK(r.partial);
  CHECK(r.text == "abc");
  REQUIRE(parse_log_record("2023-11-14T22:13:20.123456789Z stdout F \n", r));
  CHECK(r.text == "\n");
  CHECK_FALSE(parse_log_record("2023-11-14T22:13:20.123456789Z stdin F x\n", r));
}

TEST_CASE("sandbox log: a raw log of an older sandbox reads as stdout") {
  TempDir t;
  fs::write_file_atomic(t.path + "/log", "old\nlines", 0600);
  std::string all;
  read_log_records(t.path, false, [&](const LogRecord& r) {
    CHECK(r.stream == kStdout);
    CHECK(r.time_ns == 0);
    all += r.text;
  });
  CHECK(all == "old\nlines");
}
