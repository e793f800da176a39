// Image commands: import, images, inspect, rmi, gc (implemented with oci/).
#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace sbx::cli {
void register_image_commands(CLI::App&, Globals&, Action&) {}
}  // namespace sbx::cli
