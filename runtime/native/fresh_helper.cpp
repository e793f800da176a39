#include "runtime/native/fresh_helper.h"

#include <cstdio>
#include <cstring>
#include <exception>

#include "common/error.h"
#include "runtime/linux/self_exec.h"
#include "runtime/native/exec.h"
#include "runtime/native/native_backend.h"

namespace sbx::runtime {

bool is_fresh_helper(int argc, char** argv) noexcept { return argc > 1 && std::strcmp(argv[1], kHelperArg) == 0; }

int run_fresh_helper(int argc, char** argv) noexcept {
  enter_fresh_helper();
  try {
    // (Not a helper's command line at all: the same message.)
    const char* what = is_fresh_helper(argc, argv) && argc > 2 ? argv[2] : "";
    if (std::strcmp(what, "exec") == 0 && argc == 4) return exec_helper_main(helper_fd_arg(argv[3], "request"));
    if (std::strcmp(what, "init") == 0 && argc == 5)
      init_helper_main(helper_fd_arg(argv[3], "request"), helper_fd_arg(argv[4], "answer"));
    throw Error(std::string("sbx: ") + kHelperArg + " is sbx's own helper, started by sbx with the fds it needs; not a command");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
  return kExitSbxFailed;
}

}  // namespace sbx::runtime
