#include "runtime/image_config.h"

#include <cstdlib>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"

namespace sbx::runtime {

namespace {

void set_env(std::vector<std::string>& env, const std::string& kv) {
  std::string key = kv.substr(0, kv.find('='));
  for (auto& e : env)
    if (e.compare(0, key.size() + 1, key + "=") == 0) {
      e = kv;
      return;
    }
  env.push_back(kv);
}

}  // namespace

std::optional<std::string> expand_env_arg(const std::string& arg) {
  if (arg.find('=') != std::string::npos) return arg;
  if (const char* v = std::getenv(arg.c_str())) return arg + "=" + v;
  return std::nullopt;
}

std::vector<std::string> parse_env_file(const std::string& path) {
  std::istringstream in(fs::read_file(path));
  std::vector<std::string> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    line = line.substr(start);
    std::string key = line.substr(0, line.find('='));
    if (key.empty() || key.find_first_of(" \t") != std::string::npos)
      throw Error(ErrorKind::InvalidArgument,
                  "--env-file " + path + " line " + std::to_string(n) + ": invalid variable name '" + key + "'");
    if (auto kv = expand_env_arg(line)) out.push_back(*kv);
  }
  return out;
}

void apply_image_config(SandboxSpec& spec, const oci::ImageConfig& image, const ProcessOverrides& o) {
  Process& p = spec.process;
  std::vector<std::string> entry = o.entrypoint ? *o.entrypoint : image.entrypoint;
  if (entry.size() == 1 && entry[0].empty()) entry.clear();
  // docker: --entrypoint resets the image's Cmd too.
  std::vector<std::string> cmd = !o.command.empty() ? o.command : (o.entrypoint ? std::vector<std::string>{} : image.cmd);
  p.args = entry;
  p.args.insert(p.args.end(), cmd.begin(), cmd.end());
  if (p.args.empty())
    throw Error(ErrorKind::InvalidArgument,
                "no command to run: give one after the image, or use an image with an Entrypoint or Cmd");

  p.env.clear();
  set_env(p.env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  if (!spec.hostname.empty()) set_env(p.env, "HOSTNAME=" + spec.hostname);
  if (o.terminal) set_env(p.env, "TERM=xterm");
  for (const auto& e : image.env) set_env(p.env, e);
  for (const auto& e : o.env) set_env(p.env, e);

  p.cwd = o.workdir ? *o.workdir : (image.working_dir.empty() ? "/" : image.working_dir);
  if (p.cwd.empty() || p.cwd[0] != '/') throw Error(ErrorKind::InvalidArgument,
              "the working directory '" + p.cwd + "' must be an absolute path");
  p.user = o.user ? *o.user : image.user;
  p.terminal = o.terminal;
}

}  // namespace sbx::runtime
