// libFuzzer harness: Dockerfiles and .dockerignore files as `sbx build` (and
// a build request to the API server) reads them (engine/build/dockerfile.h,
// expand.h, dockerignore.h). Only sbx::Error may escape; what parses must
// also split into stages or fail with sbx::Error, every instruction's text
// must survive variable expansion (or fail with sbx::Error), and a parsed
// .dockerignore must answer for any path.
// needs: engine/build/dockerfile.h
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"
#include "engine/build/dockerfile.h"
#include "engine/build/dockerignore.h"
#include "engine/build/expand.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace sbx::build;
  try {
    Dockerfile df = parse_dockerfile(text, "Dockerfile");
    for (const auto& ins : df.instructions) {
      if (ins.line < 1 || ins.end_line < ins.line) __builtin_trap();
      Vars vars = {{"A", "a b"}, {"EMPTY", ""}, {"P", "/usr/local/lib"}};
      Expander e;
      e.vars = &vars;
      e.escape = df.escape;
      try {
        (void)e.words(ins.rest);
        for (const auto& f : ins.flags) (void)e.word(f);
        for (const auto& h : ins.heredocs) {
          Expander hb = e;
          hb.skip_quotes = true;
          (void)hb.word(h.content);
        }
      } catch (const sbx::Error&) {
      }
    }
    try {
      StagePlan plan = plan_stages(df);
      if (plan.stages.empty()) __builtin_trap();
    } catch (const sbx::Error&) {
    }
  } catch (const sbx::Error&) {
  }
  try {
    IgnoreMatcher m(text);
    for (const char* p : {"a", "a/b/c", ".dockerignore", "Dockerfile", "src/x.py", "node_modules/p/q"})
      (void)m.excluded(p);
    (void)ignore_pattern_match(text, "a/b");
  } catch (const sbx::Error&) {
  }
  (void)clean_path(text);
  return 0;
}
