// POST /sbx/v1/build (docs/api.md "Builds"): the build context as a tar in
// the body, the parameters of the Docker API's POST /build in the query
// (server/build_request.h), and the answer a stream of JSON lines — the
// engine's events as `sbx build --json` prints them (step, cached, output,
// done, warning, pull), then one last line:
//   {"event": "result", "id", "names", "steps", "cached", "seconds"}
//   {"event": "error", "message", "kind", "exit_code"}
// A bad parameter is answered before the stream, as any /sbx/v1 error.
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/log.h"
#include "server/build_request.h"
#include "server/error_status.h"
#include "server/v1/sbx_v1.h"

namespace sbx::server {

using nlohmann::json;

void SbxV1::build(Connection& c, const Request& r) {
  build::BuildOptions o = build_options(r);
  if (!c.begin_chunks(200, "application/x-ndjson")) return c.set_close();
  bool gone = false;
  auto line = [&](const std::string& l) {
    if (!gone && !c.chunk(l + "\n")) gone = true;
  };
  o.on_event = [&](const build::BuildEvent& e) { line(build::event_json(e)); };
  o.cancelled = [&] { return gone || peer_closed(c.fd()); };
  try {
    build::BuildResult res = engine_.build(o);
    line(json{{"event", "result"},
              {"id", res.image.id},
              {"names", res.image.names},
              {"steps", res.steps},
              {"cached", res.cached},
              {"seconds", res.elapsed.count() / 1000.0}}
             .dump());
  } catch (const Error& e) {
    V1Error v = classify(e);
    log::info(std::string("serve: build failed: ") + e.what());
    line(json{{"event", "error"}, {"message", v.message}, {"kind", v.kind}, {"exit_code", e.exit_code()}}.dump(
        -1, ' ', false, json::error_handler_t::replace));
  } catch (const std::exception& e) {
    line(json{{"event", "error"}, {"message", e.what()}, {"kind", "Internal"}, {"exit_code", 125}}.dump(
        -1, ' ', false, json::error_handler_t::replace));
  }
  if (gone) return c.set_close();
  c.end_chunks();
}

}  // namespace sbx::server
