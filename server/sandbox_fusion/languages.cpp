// The languages table (languages.h).
#include "server/sandbox_fusion/languages.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"

namespace sbx::server::sandbox_fusion {

using json = nlohmann::json;

LanguageTable default_languages() {
  using V = std::vector<std::string>;
  LanguageTable t;
  // Images: the Docker Official Images of each toolchain (Debian bookworm
  // based); `sbx pull` them, or point an entry at an image of your own.
  t["python"] = {"python:3.11-bookworm", "main.py", std::nullopt, V{"python3", "main.py"}};
  t["pytest"] = {"python:3.11-bookworm", "test_main.py", std::nullopt, V{"python3", "-m", "pytest", "test_main.py"}};
  t["bash"] = {"debian:bookworm-slim", "main.sh", std::nullopt, V{"bash", "main.sh"}};
  t["cpp"] = {"gcc:12-bookworm", "main.cpp", V{"g++", "-std=c++17", "main.cpp", "-o", "test", "-lpthread"}, V{"./test"}};
  t["nodejs"] = {"node:18-bookworm-slim", "main.js", std::nullopt, V{"node", "main.js"}};
  t["go"] = {"golang:1.21-bookworm", "main.go", V{"go", "build", "-o", "out", "main.go"}, V{"./out"}};
  t["java"] = {"eclipse-temurin:17-jdk", "Main.java", V{"javac", "Main.java"}, V{"java", "-ea", "Main"}};
  t["rust"] = {"rust:1-bookworm", "main.rs", V{"rustc", "main.rs", "-o", "test"}, V{"./test"}};
  return t;
}

namespace {

std::vector<std::string> argv_of(const json& v, const std::string& where) {
  if (!v.is_array() || v.empty()) throw Error(where + " must be a non-empty array of strings");
  std::vector<std::string> out;
  for (const auto& a : v) {
    if (!a.is_string()) throw Error(where + " must be a non-empty array of strings");
    out.push_back(a.get<std::string>());
  }
  return out;
}

}  // namespace

LanguageTable parse_languages(const std::string& text, const std::string& what) {
  LanguageTable t = default_languages();
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    throw Error(what + ": not JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(what + ": must be a JSON object: language name → {image, file, compile, run}");
  for (const auto& [name, v] : j.items()) {
    const std::string where = what + ": \"" + name + "\"";
    if (name.empty()) throw Error(what + ": an empty language name");
    if (!v.is_object()) throw Error(where + " must be an object {image, file, compile, run}");
    const bool known = t.count(name) > 0;
    Language l = known ? t.at(name) : Language{};
    for (const auto& [k, x] : v.items()) {
      if (k == "image") {
        if (!x.is_string() || x.get<std::string>().empty()) throw Error(where + ".image must be a non-empty string");
        l.image = x.get<std::string>();
      } else if (k == "file") {
        if (!x.is_string()) throw Error(where + ".file must be a string");
        l.file = x.get<std::string>();
        if (l.file.empty() || l.file[0] == '/' || l.file.find("..") != std::string::npos || l.file.back() == '/')
          throw Error(where + ".file must be a relative file name without \"..\" (not \"" + l.file + "\")");
      } else if (k == "compile") {
        if (x.is_null()) l.compile.reset();
        else l.compile = argv_of(x, where + ".compile");
      } else if (k == "run") {
        l.run = argv_of(x, where + ".run");
      } else {
        throw Error(where + ": unknown key \"" + k + "\" (image, file, compile, run)");
      }
    }
    if (l.image.empty()) throw Error(where + ": a new language needs \"image\"");
    if (l.file.empty() || l.run.empty()) throw Error(where + ": a new language needs \"file\" and \"run\"");
    t[name] = std::move(l);
  }
  return t;
}

LanguageTable load_languages(const std::string& path) {
  std::string text;
  try {
    text = fs::read_file(path);
  } catch (const Error& e) {
    throw Error("--languages " + path + ": " + e.what());
  }
  return parse_languages(text, "--languages " + path);
}

bool is_sandbox_fusion_language(const std::string& name) {
  static const char* const kNames[] = {"python", "cpp",     "nodejs",        "go",     "go_test", "java",
                                       "php",    "csharp",  "bash",          "typescript", "sql", "rust",
                                       "cuda",   "lua",     "R",             "perl",   "D_ut",    "ruby",
                                       "scala",  "julia",   "pytest",        "junit",  "kotlin_script", "jest",
                                       "verilog", "python_gpu", "lean",      "swift",  "racket"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

}  // namespace sbx::server::sandbox_fusion
