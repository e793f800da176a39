// sbx build: an image from a Dockerfile (engine::Engine::build), with
// progress on stderr and the image id on stdout.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/usage.h"
#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "engine/build/context.h"
#include "oci/reference.h"

namespace sbx::cli {

namespace {

volatile sig_atomic_t g_interrupted = 0;
void on_interrupt(int) { g_interrupted = 1; }

struct BuildFlags {
  std::vector<std::string> tags, build_args, labels, secrets;
  std::string file, target, pull = "missing", network = "private", iidfile, platform, context;
  bool no_cache = false, quiet = false, json = false, pull_set = false, rm = true;
};

/// A temp file holding what came on stdin (`sbx build -`), removed with it.
struct StdinFile {
  std::string path;
  ~StdinFile() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

std::string read_stdin_to_file(StdinFile& f) {
  const char* tmp = std::getenv("TMPDIR");
  std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/sbx-build-stdin-XXXXXX";
  int fd = ::mkstemp(t.data());
  if (fd < 0) throw_errno("create a temp file for stdin in " + t);
  f.path = t;
  Fd out(fd);
  fs::read_fd(0, "stdin", [&](std::string_view s) { fs::write_all(out.fd, s, t); });
  return t;
}


std::string absolute(const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  char cwd[4096];
  if (!::getcwd(cwd, sizeof cwd)) throw_errno("getcwd");
  return std::string(cwd) + "/" + p;
}

/// Progress for a person: "[2/7] RUN …" ("[STAGE 5/9] …" in a multi-stage
/// build: one numbering over the whole build), the step's output, CACHED
/// marks and the time of each step; on a terminal a step without output ends
/// on its own line.
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet), tty_(::isatty(2)) {}

  void operator()(const build::BuildEvent& e) {
    using K = build::BuildEvent::Kind;
    std::string tag = "[" + (e.stage.empty() ? "" : e.stage + " ") + std::to_string(e.step) + "/" +
                      std::to_string(e.steps) + "]";
    switch (e.kind) {
      case K::Step:
        output_.clear();
        current_ = tag + " " + shorten(e.text);
        if (quiet_) return;
        close_line();
        std::fprintf(stderr, "%s", current_.c_str());
        open_ = true;
        if (!tty_) close_line();
        break;
      case K::Cached:
        if (quiet_) return;
        if (tty_ && open_) {
          std::fprintf(stderr, "\r\033[K%s CACHED %s\n", tag.c_str(), current_.substr(tag.size() + 1).c_str());
          open_ = false;
          cached_line_ = true;
        } else {
          std::fprintf(stderr, "%s CACHED\n", tag.c_str());
          cached_line_ = true;
        }
        break;
      case K::Output:
        if (quiet_) {
          if (output_.size() < (1u << 20)) output_ += e.text;
          return;
        }
        close_line();
        std::fwrite(e.text.data(), 1, e.text.size(), stderr);
        at_bol_ = !e.text.empty() && e.text.back() == '\n';
        break;
      case K::Done:
        if (quiet_) return;
        if (cached_line_) {
          cached_line_ = false;
          break;
        }
        if (open_ && tty_) {
          std::fprintf(stderr, "  %.2fs\n", e.seconds);
          open_ = false;
        } else {
          if (!at_bol_) std::fputc('\n', stderr);
          at_bol_ = true;
          std::fprintf(stderr, "%s done %.2fs\n", tag.c_str(), e.seconds);
        }
        break;
      case K::Warning:
        close_line();
        std::fprintf(stderr, "sbx: warning: %s\n", e.text.c_str());
        break;
      case K::Pull:
        // A pull's own progress lines follow (or nothing, for a local image).
        if (!quiet_ && tty_) close_line();
        break;
    }
    std::fflush(stderr);
  }

  /// After a failure: the failed step's output when it was held back (-q).
  void failed() {
    close_line();
    if (quiet_ && !output_.empty()) {
      std::fprintf(stderr, "%s\n", current_.c_str());
      std::fwrite(output_.data(), 1, output_.size(), stderr);
      if (output_.back() != '\n') std::fputc('\n', stderr);
    }
    std::fflush(stderr);
  }

 private:
  void close_line() {
    if (open_) std::fputc('\n', stderr);
    open_ = false;
  }
  std::string shorten(const std::string& s) const {
    std::string one;
    for (char c : s) one += (c == '\n' || c == '\t') ? ' ' : c;
    const size_t max = tty_ ? 100 : 400;
    return one.size() > max ? one.substr(0, max - 3) + "..." : one;
  }
  bool quiet_, tty_;
  bool open_ = false, at_bol_ = true, cached_line_ = false;
  std::string current_, output_;
};

/// --json: one event a line on stdout.
void json_event(const build::BuildEvent& e) { std::cout << build::event_json(e) << "\n" << std::flush; }

int run_build(const Globals& g, BuildFlags& f) {
  build::BuildOptions o;
  StdinFile stdin_file;
  // The context.
  if (f.context.empty()) throw Error("sbx build needs a CONTEXT: a directory, or - for a tar or a Dockerfile on stdin");
  if (f.context.find("://") != std::string::npos || f.context.rfind("git@", 0) == 0)
    throw Error(ErrorKind::Unsupported,
                "sbx build " + f.context + ": remote contexts (URLs, git) are not supported; give a directory or -");
  if (f.file == "-" && f.context == "-") throw Error("sbx build: the Dockerfile and the context cannot both come from stdin");
  if (f.context == "-") {
    std::string p = read_stdin_to_file(stdin_file);
    if (sbx::build::looks_like_archive(p)) {
      o.context_tar = p;
    } else {
      o.dockerfile_text = fs::read_file(p);
      o.has_dockerfile_text = true;  // a Dockerfile alone: an empty context
    }
  } else {
    o.context_dir = f.context;
  }
  if (f.file == "-") {
    o.dockerfile_text = fs::read_file(read_stdin_to_file(stdin_file));
    o.has_dockerfile_text = true;
  } else if (!f.file.empty()) {
    if (!o.context_tar.empty())
      o.dockerfile = f.file;  // inside the tar
    else
      o.dockerfile = absolute(f.file);  // -f is relative to the current directory, as docker's
  }
  for (const auto& t : f.tags) o.tags.push_back(oci::normalize_name(t));  // bad names fail before the build
  for (const auto& a : f.build_args) {
    size_t eq = a.find('=');
    if (eq == 0) throw Error(ErrorKind::InvalidArgument, "invalid --build-arg '" + a + "': expected KEY=VALUE");
    if (eq == std::string::npos) {
      const char* v = std::getenv(a.c_str());
      if (v) o.build_args.emplace_back(a, v);  // KEY alone: from the environment (or not given)
    } else {
      o.build_args.emplace_back(a.substr(0, eq), a.substr(eq + 1));
    }
  }
  for (const auto& l : f.labels) {
    size_t eq = l.find('=');
    if (eq == 0 || eq == std::string::npos) throw Error(ErrorKind::InvalidArgument,
                "invalid --label '" + l + "': expected KEY=VALUE");
    o.labels[l.substr(0, eq)] = l.substr(eq + 1);
  }
  for (const auto& s : f.secrets) {
    std::string id, src;
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find(',', i);
      if (j == std::string::npos) j = s.size();
      std::string kv = s.substr(i, j - i);
      i = j + 1;
      size_t eq = kv.find('=');
      std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
      if (k == "id") id = v;
      else if (k == "src" || k == "source") src = v;
      else if (k == "type" && v == "file") continue;
      else if (k == "env") src = "env:" + v;
      else throw Error(ErrorKind::InvalidArgument, "invalid --secret '" + s + "': expected id=ID,src=FILE");
    }
    if (id.empty() || src.empty()) throw Error(ErrorKind::InvalidArgument,
                "invalid --secret '" + s + "': expected id=ID,src=FILE");
    if (src.rfind("env:", 0) == 0) {
      // From an environment variable: written to a temp file only sbx reads.
      const char* v = std::getenv(src.substr(4).c_str());
      if (!v) throw Error("--secret " + s + ": the environment variable " + src.substr(4) + " is not set");
      // (removed at exit, with the static list)
      static std::vector<std::unique_ptr<StdinFile>> secret_files;
      std::string t = "/tmp/sbx-build-secret-XXXXXX";
      int fd = ::mkstemp(t.data());
      if (fd < 0) throw_errno("create a temp file for a secret");
      secret_files.push_back(std::make_unique<StdinFile>());
      secret_files.back()->path = t;
      Fd out(fd);
      fs::write_all(out.fd, v, t);
      src = t;
    }
    if (!fs::exists(src)) throw Error("--secret " + s + ": " + src + " does not exist");
    o.secrets[id] = absolute(src);
  }
  o.target = f.target;
  o.no_cache = f.no_cache;
  o.pull = oci::parse_pull_policy(f.pull == "true" ? "always" : f.pull == "false" ? "missing" : f.pull);
  o.pull_explicit = f.pull_set;
  o.pull_options.progress = make_pull_printer(f.quiet, f.json);
  if (f.network == "private" || f.network == "bridge" || f.network == "default")
    o.network = NetworkMode::Private;
  else if (f.network == "none")
    o.network = NetworkMode::None;
  else if (f.network == "host")
    o.network = NetworkMode::Host;
  else
    throw Error(ErrorKind::InvalidArgument,
                "invalid --network '" + f.network + "': use private (the default), none or host");
  o.platform = f.platform;
  Progress progress(f.quiet);
  if (f.json)
    o.on_event = json_event;
  else
    o.on_event = [&](const build::BuildEvent& e) { progress(e); };

  // Ctrl-C between steps: the build stops at the next check and cleans up
  // (during a RUN the signal goes to the step, which then ends the build).
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
  o.cancelled = [] { return g_interrupted != 0; };

  build::BuildResult r;
  try {
    r = make_engine(g).build(o);
  } catch (...) {
    if (!f.json) progress.failed();
    throw;
  }
  if (!f.iidfile.empty()) fs::write_file_atomic(absolute(f.iidfile), "sha256:" + r.image.id, 0644);
  if (f.json) {
    nlohmann::json j = {{"event", "result"},  {"id", r.image.id},      {"names", r.image.names},
                        {"steps", r.steps},   {"cached", r.cached},    {"seconds", r.elapsed.count() / 1000.0}};
    std::cout << j.dump() << "\n";
    return 0;
  }
  if (!f.quiet) {
    std::fprintf(stderr, "Built %s in %.2fs (%d steps, %d cached)\n", r.image.id.substr(0, 12).c_str(),
                 r.elapsed.count() / 1000.0, r.steps, r.cached);
    for (const auto& n : r.image.names) std::fprintf(stderr, "Tagged %s\n", n.c_str());
  }
  std::cout << r.image.id << "\n";
  return 0;
}

}  // namespace

void register_build_command(CLI::App& app, Globals& g, Action& action) {
  auto f = std::make_shared<BuildFlags>();
  CLI::App* cmd = app.add_subcommand("build", "Build an image from a Dockerfile (each RUN in a sandbox)");
  set_usage(*cmd, {"sbx build [OPTIONS] CONTEXT"});
  cmd->footer(
      "CONTEXT is a directory, or - for a tar of one (plain, gzip or zstd) or a Dockerfile alone on stdin.\n"
      "Each RUN runs in a native sandbox as 'sbx run' isolates it (user namespace, seccomp, memory and pids\n"
      "bounds; its writes on disk under --root, without run's 2 GiB bound). Steps are cached in the store:\n"
      "an unchanged step (same parent, instruction, build args, and for COPY/ADD the same source content) is\n"
      "reused ('sbx image prune' removes the cache). Progress goes to stderr, the image id to stdout.\n\n"
      "Exit status: 0 built; 1 a RUN failed; 125 a bad Dockerfile, option, context or image.");
  cmd->add_option("CONTEXT", f->context, "Build context: a directory, or - (stdin)")->required();
  cmd->add_option("-t,--tag", f->tags, "Name the image NAME[:TAG] (repeatable)")->allow_extra_args(false);
  cmd->add_option("-f,--file", f->file, "Dockerfile (default: CONTEXT/Dockerfile; - for stdin)");
  cmd->add_option("--build-arg", f->build_args, "Set a build argument KEY=VALUE (KEY alone: from the environment)")
      ->allow_extra_args(false);
  cmd->add_option("--target", f->target, "Build this stage (and the ones it needs) only");
  cmd->add_flag("--no-cache", f->no_cache, "Run every step, reusing nothing from the build cache");
  cmd->add_flag("--pull{always}", f->pull,
                "Pull base images: missing (default), always (also --pull alone), never")
      ->check(CLI::IsMember({"missing", "always", "never", "true", "false", "newer"}))
      ->each([f](const std::string&) { f->pull_set = true; });
  cmd->add_option("--network", f->network,
                  "Network of RUN steps and ADD URL: private (default: own veth, NAT out), none, host")
      ->capture_default_str();
  cmd->add_option("--label", f->labels, "Add a label KEY=VALUE to the image (repeatable)")->allow_extra_args(false);
  cmd->add_option("--secret", f->secrets,
                  "A secret for RUN --mount=type=secret: id=ID,src=FILE (or env=VAR); never stored in the image")
      ->allow_extra_args(false);
  cmd->add_option("--iidfile", f->iidfile, "Write the image id (sha256:…) to FILE")->type_name("FILE");
  cmd->add_option("--platform", f->platform, "Only this host's platform (e.g. linux/amd64) is supported");
  cmd->add_flag("-q,--quiet", f->quiet, "Print only the image id (a failing step's output still goes to stderr)");
  cmd->add_flag("--json", f->json, "Progress as JSON lines on stdout (step, cached, output, done, warning, result)");
  cmd->add_flag("--rm", f->rm, "Accepted for docker compatibility (step sandboxes are always removed)");
  cmd->callback([f, &g, &action] { action = [f, &g] { return run_build(g, *f); }; });
}

}  // namespace sbx::cli
