// The one table per wire format from an error's kind (common/error.h) to a
// status: the servers never guess a status from an error's words.
#pragma once
#include <string>

#include "common/error.h"

namespace sbx::server {

/// Docker Engine API: the HTTP status for a library error (404 for every
/// *NotFound, 400 InvalidArgument and Unsupported, 409 Conflict, else 500).
int docker_status(const Error& e) noexcept;

/// /sbx/v1 (docs/api.md): status and kind name. Internal errors with ENOENT
/// (a host or sandbox path missing) are FileNotFound.
struct V1Status {
  int status;
  ErrorKind kind;
};
V1Status v1_status(const Error& e) noexcept;

/// E2B REST API: the HTTP status (as docker_status).
int e2b_status(const Error& e) noexcept;

/// E2B envd (Connect protocol): the Connect code ("not_found",
/// "invalid_argument", "failed_precondition", "internal"); ENOENT is not_found.
const char* connect_code(const Error& e) noexcept;

}  // namespace sbx::server
