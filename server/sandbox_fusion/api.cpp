// The SandboxFusion-compatible API (api.h).
#include "server/sandbox_fusion/api.h"

#include <chrono>

#include "common/error.h"
#include "common/log.h"

namespace sbx::server::sandbox_fusion {

using json = nlohmann::json;

namespace {

bool token_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string detail(const std::string& msg) { return dump({{"detail", msg}}); }

}  // namespace

Api::Api(RunnerOptions opts, std::string token)
    : runner_(std::make_unique<Runner>(std::move(opts))), token_(std::move(token)) {}

std::optional<std::string> Api::route(const Request& r) const {
  std::string path = r.target.substr(0, r.target.find('?'));
  if (token_.empty()) return path;
  const std::string prefix = "/" + token_;
  if (path.size() < prefix.size() || !token_equal(path.substr(0, prefix.size()), prefix)) return std::nullopt;
  path = path.substr(prefix.size());
  if (!path.empty() && path[0] != '/') return std::nullopt;
  return path.empty() ? "/" : path;
}

std::optional<HttpError> Api::authorize(const Request& r) const {
  if (route(r)) return std::nullopt;
  return HttpError{401, "sbx serve --sandbox-fusion: the URL must start with the token: http://HOST:PORT/TOKEN/run_code"};
}

Site Api::site() {
  Site s;
  if (!token_.empty()) s.authorize = [this](const Request& r) { return authorize(r); };
  s.body_rule = [](const Request&) { return BodyRule{kMaxBody, false}; };
  s.handle = [this](Connection& c, Request& r) { handle(c, r); };
  s.error_body = [](const Request*, int, const std::string& message) { return detail(message); };
  return s;
}

void Api::handle(Connection& c, Request& r) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string path = route(r).value_or("/");
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  auto endpoint = [&](const char* method) {
    if (r.method == method) return true;
    c.send(405, detail("Method Not Allowed"));
    return false;
  };
  if (path == "/v1/ping") {
    if (endpoint("GET")) c.send(200, "\"pong\"");
    return;
  }
  if (path == "/metrics") {
    if (endpoint("GET")) c.send(200, runner_->metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
    return;
  }
  if (path != "/run_code" && path != "/run_jupyter") {
    c.send(404, detail("Not Found"));
    return;
  }
  if (!endpoint("POST")) return;
  const bool code = path == "/run_code";
  const std::string ep = code ? "run_code" : "run_jupyter";
  std::string language = "-";
  try {
    json out;
    if (code) {
      RunCodeRequest req = parse_run_code(r.body);
      language = req.language;
      out = runner_->run_code(req);
    } else {
      RunJupyterRequest req = parse_run_jupyter(r.body);
      language = req.kernel;
      out = runner_->run_jupyter(req);
    }
    runner_->metrics().request(ep, language, out.value("status", "?"), seconds());
    c.send(200, dump(out));
  } catch (const ValidationError& e) {
    runner_->metrics().request(ep, language, "422", seconds());
    c.send(422, dump({{"detail", e.detail}}));
  } catch (const QueueTimeout& q) {
    runner_->metrics().request(ep, language, "504", seconds());
    c.send(504, detail("sbx serve --sandbox-fusion: no sandbox slot within " + std::to_string(q.waited.count()) +
                       " ms (--max-concurrency " + std::to_string(runner_->options().max_concurrency) +
                       " busy); retry"));
  } catch (const std::exception& e) {
    log::warn(std::string("serve sandbox-fusion: ") + ep + ": " + e.what());
    runner_->metrics().request(ep, language, "500", seconds());
    c.send(500, dump({{"detail", e.what()}, {"traceback", json::array()}}));
  }
}

}  // namespace sbx::server::sandbox_fusion
