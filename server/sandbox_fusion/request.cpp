// SandboxFusion request bodies (request.h).
#include "server/sandbox_fusion/request.h"

#include <cmath>

#include "common/error.h"
#include "common/json_number.h"
#include "server/sandbox_fusion/languages.h"

namespace sbx::server::sandbox_fusion {

using json = nlohmann::json;

namespace {

/// Collects FastAPI-shaped errors for one body.
struct Checker {
  const json& body;
  json errors = json::array();

  void add(const std::string& type, const json& loc, const std::string& msg, const json& input) {
    json l = json::array({"body"});
    if (loc.is_array())
      for (const auto& x : loc) l.push_back(x);
    else
      l.push_back(loc);
    errors.push_back({{"type", type}, {"loc", l}, {"msg", msg}, {"input", input}});
  }

  const json* field(const std::string& k) const {
    auto it = body.find(k);
    return it == body.end() ? nullptr : &*it;
  }

  std::optional<std::string> str(const std::string& k, bool required) {
    const json* v = field(k);
    if (!v) {
      if (required) add("missing", k, "Field required", body);
      return std::nullopt;
    }
    if (!v->is_string()) {
      add("string_type", k, "Input should be a valid string", *v);
      return std::nullopt;
    }
    return v->get<std::string>();
  }

  void number(const std::string& k, double& out) {
    const json* v = field(k);
    if (!v) return;
    if (!v->is_number() || v->is_boolean()) {
      add("float_type", k, "Input should be a valid number", *v);
      return;
    }
    out = v->get<double>();
    if (!std::isfinite(out)) add("finite_number", k, "Input should be a finite number", *v);
  }

  void integer(const std::string& k, int64_t& out) {
    const json* v = field(k);
    if (!v) return;
    // pydantic takes a whole float (2.0) for an int.
    if (auto n = json_number::to_int64(*v, true)) {
      out = *n;
    } else if (v->is_number_float()) {
      add("int_from_float", k, "Input should be a valid integer, got a number with a fractional part", *v);
    } else {
      add("int_type", k, "Input should be a valid integer", *v);
    }
  }

  void strings(const std::string& k, std::vector<std::string>& out) {
    const json* v = field(k);
    if (!v) return;
    if (!v->is_array()) {
      add("list_type", k, "Input should be a valid list", *v);
      return;
    }
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) add("string_type", json::array({k, i}), "Input should be a valid string", (*v)[i]);
      else out.push_back((*v)[i].get<std::string>());
    }
  }

  void files(const std::string& k, FileMap& out, bool nullable) {
    const json* v = field(k);
    if (!v) return;
    if (!v->is_object()) {
      add("dict_type", k, "Input should be a valid dictionary", *v);
      return;
    }
    for (const auto& [p, c] : v->items()) {
      if (c.is_null() && nullable) out.emplace_back(p, std::nullopt);
      else if (c.is_string()) out.emplace_back(p, c.get<std::string>());
      else add("string_type", json::array({k, p}), "Input should be a valid string", c);
    }
  }
};

json parse_body(const std::string& body) {
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    // FastAPI: {"type": "json_invalid", "loc": ["body", POSITION], ...}. A
    // number beyond a double (1e315) is json's out_of_range, not a
    // parse_error, and has no position: 0 then (found by fuzz_sandbox_fusion).
    const auto* pe = dynamic_cast<const json::parse_error*>(&e);
    const size_t at = pe && pe->byte > 0 ? pe->byte - 1 : 0;
    throw ValidationError{json::array({{{"type", "json_invalid"},
                                        {"loc", json::array({"body", at})},
                                        {"msg", "JSON decode error"},
                                        {"input", json::object()},
                                        {"ctx", {{"error", e.what()}}}}})};
  }
}

void require_object(const json& j) {
  if (!j.is_object())
    throw ValidationError{json::array(
        {{{"type", "model_attributes_type"}, {"loc", json::array({"body"})}, {"msg", "Input should be a valid dictionary or object to extract fields from"}, {"input", j}}})};
}

}  // namespace

RunCodeRequest parse_run_code(const std::string& body) {
  json j = parse_body(body);
  require_object(j);
  Checker c{j};
  RunCodeRequest r;
  c.number("compile_timeout", r.compile_timeout);
  c.number("run_timeout", r.run_timeout);
  c.integer("memory_limit_MB", r.memory_limit_mb);
  if (auto s = c.str("code", true)) r.code = *s;
  if (const json* v = c.field("stdin"); v && !v->is_null()) r.stdin_data = c.str("stdin", false);
  if (auto s = c.str("language", true)) {
    r.language = *s;
    if (!is_sandbox_fusion_language(*s))
      c.add("literal_error", "language",
            "Input should be one of SandboxFusion's languages ('python', 'cpp', 'nodejs', 'go', 'java', 'bash', "
            "'pytest', 'rust', …)",
            *s);
  }
  c.files("files", r.files, true);
  c.strings("fetch_files", r.fetch_files);
  c.strings("args", r.args);
  if (!c.errors.empty()) throw ValidationError{c.errors};
  return r;
}

RunJupyterRequest parse_run_jupyter(const std::string& body) {
  json j = parse_body(body);
  require_object(j);
  Checker c{j};
  RunJupyterRequest r;
  if (!c.field("cells")) c.add("missing", "cells", "Field required", j);
  else c.strings("cells", r.cells);
  c.number("cell_timeout", r.cell_timeout);
  c.number("total_timeout", r.total_timeout);
  c.integer("memory_limit_MB", r.memory_limit_mb);
  if (auto s = c.str("kernel", false)) {
    r.kernel = *s;
    if (*s != "python3") c.add("literal_error", "kernel", "Input should be 'python3'", *s);
  }
  c.files("files", r.files, false);
  c.strings("fetch_files", r.fetch_files);
  if (!c.errors.empty()) throw ValidationError{c.errors};
  return r;
}

std::string sandbox_path(const std::string& work_dir, const std::string& path) {
  if (path.empty()) throw Error("an empty file path");
  if (path.find('\0') != std::string::npos) throw Error("file path has a NUL byte");
  if (path[0] == '/') throw Error("file path \"" + path + "\" is absolute: give it relative to the work dir");
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string p = path.substr(i, j - i);
    if (p == "..") {
      if (parts.empty()) throw Error("file path \"" + path + "\" leaves the work dir");
      parts.pop_back();
    } else if (!p.empty() && p != ".") {
      parts.push_back(p);
    }
    i = j + 1;
  }
  if (parts.empty()) throw Error("file path \"" + path + "\" names the work dir itself");
  std::string out = work_dir;
  for (const auto& p : parts) out += "/" + p;
  return out;
}

}  // namespace sbx::server::sandbox_fusion
