// The request bodies of SandboxFusion's /run_code and /run_jupyter, parsed
// and validated as its pydantic models do (sandbox/server/sandbox_api.py
// RunCodeRequest, sandbox/runners/types.py RunJupyterRequest): the same
// field names, types and defaults; unknown fields are ignored. A body that
// does not fit is a ValidationError, answered 422 with FastAPI's shape
// {"detail": [{"type", "loc": ["body", FIELD], "msg", "input"}]}.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace sbx::server::sandbox_fusion {

/// A body that fails validation: `detail` is FastAPI's list of errors.
struct ValidationError {
  nlohmann::json detail;
};

/// path (as sent) → base64 content (nullopt: JSON null).
using FileMap = std::vector<std::pair<std::string, std::optional<std::string>>>;

struct RunCodeRequest {
  std::string code;
  std::string language;
  double compile_timeout = 10;  ///< seconds
  double run_timeout = 10;      ///< seconds
  int64_t memory_limit_mb = -1; ///< -1 (or below 1): the server's default
  std::optional<std::string> stdin_data;
  FileMap files;
  std::vector<std::string> fetch_files;
  std::vector<std::string> args;  ///< appended to the run command
};

struct RunJupyterRequest {
  std::vector<std::string> cells;
  double cell_timeout = 0;    ///< seconds per cell; 0: none (total_timeout only)
  double total_timeout = 45;  ///< seconds for all cells
  int64_t memory_limit_mb = -1;
  std::string kernel = "python3";
  FileMap files;
  std::vector<std::string> fetch_files;
};

/// Parses a /run_code body. Throws ValidationError (malformed JSON
/// included: FastAPI's "json_invalid").
RunCodeRequest parse_run_code(const std::string& body);

/// Parses a /run_jupyter body. Throws ValidationError.
RunJupyterRequest parse_run_jupyter(const std::string& body);

/// A request path of `files` / `fetch_files` as an absolute path inside the
/// sandbox: relative ones under `work_dir`, normalized ("a/./b" → "a/b").
/// Throws sbx::Error when it is empty, absolute or climbs out of `work_dir`
/// with "..".
std::string sandbox_path(const std::string& work_dir, const std::string& path);

}  // namespace sbx::server::sandbox_fusion
