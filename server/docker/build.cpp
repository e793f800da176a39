// POST /build of the Docker Engine API, as the classic builder (version=1)
// serves it: the context tar in the body, the build's parameters in the
// query (server/build_request.h), and a stream of JSON messages that the
// docker CLI and docker-py parse:
//   {"stream": "Step 1/3 : FROM busybox\n"}     each step, and its output
//   {"status": "Pulling fs layer", "id": …}      a FROM that pulls
//   {"aux": {"ID": "sha256:…"}}                  the result (docker build --iidfile)
//   {"stream": "Successfully built 0123456789ab\n"}, {"stream": "Successfully tagged x:latest\n"}
//   {"errorDetail": {"code": N, "message": …}, "error": …}   a failure, last
// With q=1 only the image id is streamed ({"stream": "sha256:…\n"}), and on
// a failure the held-back output before the error. As dockerd, an error
// before anything was streamed is an HTTP error instead.
//
// A thin front end: the build is Engine::build, the one `sbx build` runs.
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/log.h"
#include "server/build_request.h"
#include "server/docker/api.h"

namespace sbx::server {

using nlohmann::json;

void Api::build(Connection& c, const Request& r) {
  build::BuildOptions o = build_options(r);  // a bad parameter: 400, nothing built
  const bool quiet = r.flag("q");
  bool started = false, gone = false, at_bol = true;
  std::string held;  // q: the output held back (shown before an error)
  auto send = [&](const json& j) {
    if (gone) return;
    if (!started) {
      started = true;
      if (!c.begin_chunks(200, "application/json")) {
        gone = true;
        return;
      }
    }
    if (!c.chunk(j.dump(-1, ' ', false, json::error_handler_t::replace) + "\r\n")) gone = true;
  };
  auto stream = [&](const std::string& text) {
    if (text.empty()) return;
    at_bol = text.back() == '\n';
    if (!quiet) return send({{"stream", text}});
    if (held.size() < (1u << 20)) held += text;
  };
  o.on_event = [&](const build::BuildEvent& e) {
    using K = build::BuildEvent::Kind;
    if (e.kind != K::Output && !at_bol) stream("\n");
    switch (e.kind) {
      case K::Step:
        stream("Step " + std::to_string(e.step) + "/" + std::to_string(e.steps) + " : " + e.text + "\n");
        break;
      case K::Cached: stream(" ---> Using cache\n"); break;
      case K::Output: stream(e.text); break;
      case K::Warning: stream("[WARNING]: " + e.text + "\n"); break;
      case K::Done:
      case K::Pull: break;  // (a pull's own messages follow)
    }
  };
  o.pull_options.progress = [&](const oci::PullEvent& e) {
    if (quiet) return;
    json m = pull_message(e);
    if (!m.is_null()) send(m);
  };
  // A client that left: the build stops at its next check and cleans up.
  o.cancelled = [&] { return gone || peer_closed(c.fd()); };

  build::BuildResult res;
  try {
    res = engine_.build(o);
  } catch (const std::exception& ex) {
    const Error* err = dynamic_cast<const Error*>(&ex);
    if (!started && held.empty()) throw;  // nothing streamed yet: an HTTP error (handle())
    if (gone) return c.set_close();
    if (!held.empty()) send({{"stream", held}});
    else if (!at_bol) send({{"stream", "\n"}});
    std::string msg = ex.what();
    log::info("serve: build failed: " + msg);
    send({{"errorDetail", {{"code", err ? err->exit_code() : 1}, {"message", msg}}}, {"error", msg}});
    if (!gone) c.end_chunks();
    return c.set_close();
  }
  if (!at_bol) stream("\n");
  const std::string id = res.image.id;
  send({{"aux", {{"ID", "sha256:" + id}}}});
  if (quiet) {
    send({{"stream", "sha256:" + id + "\n"}});
  } else {
    stream("Successfully built " + id.substr(0, 12) + "\n");
    for (const auto& t : r.params("t"))
      if (!t.empty()) stream("Successfully tagged " + tagged_name(t) + "\n");
  }
  if (gone) return c.set_close();
  c.end_chunks();
}

}  // namespace sbx::server
