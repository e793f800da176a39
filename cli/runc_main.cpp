// sbx-runc's own entry point: the OCI runtime command line (cli/cmd_runc.cpp)
// as a small executable. podman and containerd start the runtime three times
// per container (create, start, delete); linked --as-needed, without sbx's
// image, registry and archive libraries, it starts in about a third of sbx's
// time. (sbx itself also answers to the name sbx-runc: cli/main.cpp.)
#include "cli/commands.h"

int main(int argc, char** argv) { return sbx::cli::runc_main(argc, argv); }
