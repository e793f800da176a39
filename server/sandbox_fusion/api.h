// The SandboxFusion-compatible HTTP API (`sbx serve --sandbox-fusion
// ADDR:PORT`, docs/sandbox-fusion.md) as a Site of the server core
// (server/http_server.h): POST /run_code, POST /run_jupyter, GET /v1/ping,
// GET /metrics. With a token (--token-file), every path starts with
// /TOKEN (verl sends no auth header: http://HOST:PORT/TOKEN/run_code).
//
// Status codes as SandboxFusion's (FastAPI): 200 with {"status":
// "SandboxError"} for a problem of the sandbox or of what validation does
// not see, 422 {"detail": [...]} for a body that does not validate
// (malformed JSON included), 500 {"detail"} for anything else; and 504 when
// the request could not start within --queue-timeout (verl retries on 504).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "server/http.h"
#include "server/http_server.h"
#include "server/sandbox_fusion/runner.h"

namespace sbx::server::sandbox_fusion {

/// Most bytes of a request body (code and base64 files), held in memory.
inline constexpr uint64_t kMaxBody = 32u << 20;

class Api {
 public:
  /// `token`: empty, or the path prefix every request must carry.
  Api(RunnerOptions opts, std::string token);

  /// The listener's Site (authorize on the path's token, bodies up to
  /// kMaxBody in memory, errors as {"detail": …}).
  Site site();

  void handle(Connection& c, Request& r);

  /// The server stops (Runner::shutdown).
  void shutdown() { runner_->shutdown(); }

 private:
  std::optional<HttpError> authorize(const Request& r) const;
  /// The request's path without its query and token; nullopt: no valid token.
  std::optional<std::string> route(const Request& r) const;

  std::unique_ptr<Runner> runner_;
  std::string token_;
};

}  // namespace sbx::server::sandbox_fusion
