#include "ocirt/checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/fs.h"
#include "ocirt/config.h"
#include "ocirt/container.h"
#include "ocirt/gvisor_delegate.h"
#include "ocirt/state_store.h"
#include "runtime/native/criu.h"
#include "runtime/gvisor/gvisor_bundle.h"

namespace sbx::ocirt {

namespace {

/// runtime::fail_native_checkpoint, with the advice worded for sbx-runc.
[[noreturn]] void fail_native(const std::string& what) {
  try {
    runtime::fail_native_checkpoint();
  } catch (const Error& e) {
    std::string m = e.what();
    const std::string sbx_hint = "; checkpoint a sandbox started with --runtime gvisor instead";
    if (auto p = m.find(sbx_hint); p != std::string::npos) m.erase(p);
    throw Error(what + ": " + m + "; run the container under gVisor (annotation " + kRuntimeAnnotation +
                    "=gvisor) to checkpoint and restore it",
                e.err(), e.exit_code());
  }
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

}  // namespace

void checkpoint(const std::string& root, const CheckpointRequest& req) {
  check_id(req.id);
  if (!is_gvisor_container(root, req.id)) {
    (void)load_state(root, req.id);  // "does not exist" first
    fail_native("checkpoint of container \"" + req.id + "\"");
  }
  if (req.image_path.empty()) throw Error("checkpoint: --image-path DIR is required (where the image is written)");
  // Before anything is written, as sbx checkpoint (refuse_gpu_checkpoint in runtime/gvisor/gvisor_checkpoint.h).
  if (runtime::gvisor::sandbox_has_gpus(read_lines(root + "/.gvisor/" + req.id), gvisor_bundle(root, req.id)))
    throw Error("cannot checkpoint container \"" + req.id +
                "\": it has NVIDIA GPUs, and runsc cannot save GPU state (device memory and driver objects live "
                "outside the sandbox's kernel); nothing was written and the container keeps running");
  fs::mkdir_p(req.image_path, 0700);
  std::vector<std::string> args = {"checkpoint", "--image-path", req.image_path};
  if (req.leave_running) args.push_back("--leave-running");
  args.push_back(req.id);
  int rc = gvisor_command(root, req.id, req.runsc_global_args, args);
  if (rc != 0)
    throw Error("runsc checkpoint of container \"" + req.id + "\" failed (exit status " + std::to_string(rc) +
                "; its message is above)");
}

int restore(const std::string& root, const RestoreRequest& req) {
  check_id(req.id);
  std::error_code ec;
  std::string bundle = std::filesystem::absolute(req.bundle, ec).lexically_normal().string();
  while (bundle.size() > 1 && bundle.back() == '/') bundle.pop_back();
  std::string text;
  try {
    text = fs::read_file(bundle + "/config.json");
  } catch (const Error& e) {
    throw Error("bundle " + bundle + ": " + e.what(), e.err());
  }
  Config cfg = parse_config(text, bundle);
  auto it = cfg.annotations.find(kRuntimeAnnotation);
  if (it == cfg.annotations.end() || it->second != "gvisor") fail_native("restore of container \"" + req.id + "\"");
  if (req.image_path.empty()) throw Error("restore: --image-path DIR is required (the checkpoint image)");
  struct stat sb{};
  if (::stat(req.image_path.c_str(), &sb) < 0 || !S_ISDIR(sb.st_mode))
    throw Error("restore: --image-path " + req.image_path + " is not a directory (a checkpoint image)", ENOENT);
  std::vector<std::string> args = {"restore", "--image-path", req.image_path};
  if (req.detach) args.push_back("--detach");
  if (!req.pid_file.empty()) args.insert(args.end(), {"--pid-file", req.pid_file});
  if (!req.console_socket.empty()) args.insert(args.end(), {"--console-socket", req.console_socket});
  int rc = gvisor_create(root, req.id, cfg, text, req.runsc_global_args, args);
  if (rc != 0 && req.detach)
    throw Error("runsc restore of container \"" + req.id + "\" failed (exit status " + std::to_string(rc) +
                "; its message is above)");
  return rc;
}

}  // namespace sbx::ocirt
