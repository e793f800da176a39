#include "engine/userns.h"

namespace sbx::engine {

bool use_userns(const SandboxSpec& spec, UsernsMode mode) noexcept {
  return mode == UsernsMode::Auto && spec.network != NetworkMode::Host;
}

}  // namespace sbx::engine
