// sbx-runc checkpoint / restore (runc's commands, runc-checkpoint(8) and
// runc-restore(8)): a running container's processes and memory saved to an
// image directory, and a new container started from it.
//
// gVisor containers (dev.sbx.runtime: gvisor) go through `runsc checkpoint`
// and `runsc restore` as sbx's own snapshots do (snapshot/checkpoint.h,
// https://gvisor.dev/docs/user_guide/checkpoint_restore/), with the same
// refusal of GPU containers. Native containers would need CRIU: sbx-runc
// says why it cannot (runtime/native/criu.h: Debian 12's CRIU 3.17 fails
// `criu check` on newer kernels) and changes nothing.
#pragma once
#include <string>
#include <vector>

namespace sbx::ocirt {

struct CheckpointRequest {
  std::string id;
  std::string image_path;     ///< --image-path: where the image goes (made when missing)
  std::string work_path;      ///< --work-path: accepted (runsc ignores it)
  bool leave_running = false; ///< --leave-running: the container goes on after the checkpoint
  std::vector<std::string> runsc_global_args;  ///< --log FILE --log-format F, passed on
};

/// `checkpoint`: saves container `id` to req.image_path. Without
/// leave_running the container stops (runsc's and runc's behaviour); the
/// caller deletes it. Throws sbx::Error: the container does not exist, no
/// --image-path, a gVisor container with NVIDIA GPUs, runsc's failure
/// (its message is on stderr), or, for a native container, why CRIU cannot
/// be used (nothing is written then).
void checkpoint(const std::string& root, const CheckpointRequest& req);

struct RestoreRequest {
  std::string id;
  std::string bundle = ".";   ///< the new container's bundle (config.json)
  std::string image_path;     ///< the checkpoint image (from `checkpoint`)
  std::string work_path;      ///< accepted
  std::string pid_file;
  std::string console_socket;
  bool detach = false;        ///< return once it runs (else wait for it and delete it)
  std::vector<std::string> runsc_global_args;
};

/// `restore`: creates and starts container `id` from the bundle and the
/// checkpoint image. Returns 0 with detach once it runs; without, the
/// container's exit status after it ended (it is then deleted). Throws
/// sbx::Error: a bad bundle, a missing image, the id exists, runsc's
/// failure, or, for a bundle without the gVisor annotation, why CRIU
/// cannot be used.
int restore(const std::string& root, const RestoreRequest& req);

}  // namespace sbx::ocirt
