// /sbx/v1 on trajectory FILES (trajectory_files.h): the file read from the
// spooled body or beneath the server's trajectory dir, then shown, branched
// or replayed through the engine (engine/trajectory_ops.h).
#include "server/v1/trajectory_files.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/fd.h"
#include "common/openat2.h"
#include "engine/trajectory_ops.h"
#include "server/v1/sbx_v1.h"

namespace sbx::server {

using nlohmann::json;

namespace {

std::string& trajectory_dir_setting() {
  static std::string dir;
  return dir;
}

/// An integer query parameter: `def` when absent; 400 when not an integer.
int int_param(const Request& r, const char* key, int def) {
  std::string v = r.param(key);
  if (v.empty()) return def;
  try {
    size_t used = 0;
    int n = std::stoi(v, &used);
    if (used == v.size()) return n;
  } catch (const std::exception&) {
  }
  throw V1Error{400, "InvalidArgument", std::string(key) + " must be an integer, not '" + v + "'"};
}

/// A trajectory file named by a client, opened under the server's trajectory
/// dir without following anything out of it (RESOLVE_BENEATH: "..", absolute
/// symlinks, links pointing above it all fail). Keeps its directory open:
/// `path` reads through that fd (/proc/self/fd/N/NAME), so that the objects/
/// beside a trajectory.jsonl are the ones in that same directory.
struct HostTrajectory {
  Fd dir;
  std::string path;
};

HostTrajectory open_host_trajectory(const std::string& requested) {
  const std::string& root = v1_trajectory_dir();
  if (root.empty())
    throw V1Error{403, "Forbidden",
                  "this server reads no trajectory files from its host (start it with 'sbx serve --trajectory-dir DIR'); "
                  "send the file as the request's body instead"};
  std::string rel = requested;
  if (!rel.empty() && rel.front() == '/') {
    if (rel.rfind(root + "/", 0) != 0)
      throw V1Error{403, "Forbidden", "path " + requested + " is not under the server's trajectory dir " + root};
    rel = rel.substr(root.size() + 1);
  }
  auto slash = rel.rfind('/');
  std::string dir = slash == std::string::npos ? "" : rel.substr(0, slash);
  std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
  if (name.empty() || name == "." || name == "..")
    throw V1Error{400, "InvalidArgument", "path " + requested + " names no file"};
  Fd rootfd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (rootfd.fd < 0) throw_errno("open the server's trajectory dir " + root);
  auto refuse = [&](int e) -> V1Error {
    if (e == ENOENT || e == ENOTDIR)
      return {404, "NotFound", "no trajectory file " + requested + " under the server's trajectory dir " + root};
    if (e == EXDEV || e == ELOOP)
      return {403, "Forbidden", "path " + requested + " leads out of the server's trajectory dir " + root +
                                    " (through '..' or a symlink): refused"};
    return {400, "InvalidArgument", "cannot open " + requested + " under " + root + ": " + std::strerror(e)};
  };
  HostTrajectory h;
  h.dir = Fd(openat2_beneath(rootfd.fd, dir, O_PATH | O_DIRECTORY));
  if (h.dir.fd < 0) throw refuse(errno);
  Fd file(openat2_beneath(h.dir.fd, name, O_RDONLY | O_NOFOLLOW));
  if (file.fd < 0) throw refuse(errno);
  struct stat st {};
  if (::fstat(file.fd, &st) < 0 || !S_ISREG(st.st_mode))
    throw V1Error{400, "InvalidArgument", "path " + requested + " is not a regular file"};
  h.path = "/proc/self/fd/" + std::to_string(h.dir.fd) + "/" + name;
  return h;
}

}  // namespace

void set_v1_trajectory_dir(const std::string& dir) {
  trajectory_dir_setting() = dir.empty() ? "" : std::filesystem::absolute(dir).lexically_normal().string();
  auto& d = trajectory_dir_setting();
  while (d.size() > 1 && d.back() == '/') d.pop_back();
}

const std::string& v1_trajectory_dir() { return trajectory_dir_setting(); }

void v1_trajectory_file(engine::Engine& eng, Connection& c, const Request& r, const std::string& op,
                        const std::function<void(const std::string&)>& watch,
                        const std::function<json(const std::string&)>& sandbox_json) {
  struct stat st {};
  bool upload = !r.body_file.empty() && ::stat(r.body_file.c_str(), &st) == 0 && st.st_size > 0;
  std::string path = r.param("path");
  if (upload && !path.empty())
    throw V1Error{400, "InvalidArgument", "give the trajectory as the body or as ?path=, not both"};
  if (!upload && path.empty())
    throw V1Error{400, "InvalidArgument",
                  "no trajectory: send the file (an export of 'sbx trajectory export', a trajectory.jsonl or a "
                  "mini-swe-agent trajectory) as the body, or name one with ?path= under the server's trajectory dir"};
  HostTrajectory host;
  if (!upload) host = open_host_trajectory(path);
  const std::string source = upload ? r.body_file : host.path;
  const std::string what = upload ? "the uploaded trajectory" : path;
  // Read it once here, so that a corrupt or hostile file is the client's
  // error (400) before anything is made, as the engine would refuse it.
  engine::trajectory::Trajectory t;
  {
    engine::trajectory::ScratchDir scratch(eng.config().run_root);
    try {
      t = engine::trajectory::load(source, scratch.path + "/src");
    } catch (const Error& e) {
      std::string m = e.what();
      if (m.rfind(source, 0) == 0) m = what + m.substr(source.size());
      throw V1Error{400, "InvalidArgument", m};
    }
  }
  if (op == "show") {
    std::string out = t.header.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    for (const auto& s : t.steps) out += s.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    return (void)c.send(200, out, "application/x-ndjson");
  }
  if (op == "branch") {
    engine::trajectory::BranchRequest req;
    req.source = source;
    req.at = int_param(r, "step", 0);
    if (req.at == 0) throw V1Error{400, "InvalidArgument", "step (the step to branch from, 1-based) is required"};
    req.count = int_param(r, "count", 1);
    req.name = r.param("name");
    req.on_created = watch;
    json out = json::array();
    for (const auto& id : engine::trajectory::branch(eng, req)) out.push_back(sandbox_json(id));
    return (void)c.send(201, r.param("count").empty() ? out.front().dump() : out.dump());
  }
  engine::trajectory::ReplayRequest req;
  req.source = source;
  req.image = r.param("image");
  req.until = int_param(r, "until", 0);
  req.keep = r.flag("keep");
  req.tolerate_regex = r.params("tolerate_regex");
  req.tolerate_path = r.params("tolerate_path");
  req.on_created = watch;
  auto res = engine::trajectory::replay(eng, req);
  c.send(200, replay_json(res, sandbox_json).dump());
}

}  // namespace sbx::server
