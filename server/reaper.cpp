// The end of a sandbox sbx serve created (server/reaper.h).
#include "server/reaper.h"

#include "common/error.h"
#include "common/log.h"

namespace sbx::server {

std::optional<runtime::EndRecord> wait_and_reap(engine::Engine& engine, const std::string& id,
                                                const runtime::SandboxState& created, std::string_view api) {
  std::optional<runtime::EndRecord> end;
  try {
    end = engine.wait(id);
  } catch (const std::exception& e) {
    log::debug("serve: " + std::string(api) + ": wait for " + id.substr(0, 12) + ": " + e.what());
  }
  // What this process holds of it (its init or monitor is our child).
  if (!created.id.empty()) engine.reap(created);
  return end;
}

}  // namespace sbx::server
