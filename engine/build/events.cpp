// Build progress events as JSON lines (engine/build/builder.h event_json).
#include <nlohmann/json.hpp>

#include "engine/build/builder.h"

namespace sbx::build {

std::string event_json(const BuildEvent& e) {
  using K = BuildEvent::Kind;
  static const char* names[] = {"step", "cached", "output", "done", "warning", "pull"};
  nlohmann::json j = {{"event", names[static_cast<int>(e.kind)]}, {"stage", e.stage}, {"step", e.step},
                      {"steps", e.steps}};
  if (e.kind == K::Step) j["instruction"] = e.text;
  if (e.kind == K::Output) j["data"] = e.text;
  if (e.kind == K::Warning) j["message"] = e.text;
  if (e.kind == K::Pull) j["image"] = e.text;
  if (e.kind == K::Done) j["seconds"] = e.seconds;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sbx::build
