// The Dockerfile parser (engine/build/dockerfile.h): directives, comments,
// continuations, flags, JSON forms, here-documents, stages and the errors
// that name file and line.
#include <doctest.h>

#include <string>

#include "common/error.h"
#include "engine/build/dockerfile.h"

using namespace sbx;
using namespace sbx::build;

namespace {

std::string error_of(const std::string& text) {
  try {
    auto df = parse_dockerfile(text, "Dockerfile");
    plan_stages(df);
  } catch (const Error& e) {
    CHECK(e.exit_code() == 125);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("build parser: instructions, comments, continuations and line numbers") {
  auto df = parse_dockerfile(
      "# a comment\n"
      "\n"
      "from busybox AS Base\n"
      "  run echo a \\\n"
      "# a comment inside\n"
      "      b \\\n"
      "\n"
      "      c\n"
      "ENV A=1 B=\"two words\"\n",
      "Dockerfile");
  REQUIRE(df.instructions.size() == 3);
  CHECK(df.instructions[0].keyword == "FROM");
  CHECK(df.instructions[0].line == 3);
  CHECK(df.instructions[1].keyword == "RUN");
  CHECK(df.instructions[1].line == 4);
  CHECK(df.instructions[1].end_line == 8);
  CHECK(df.instructions[1].rest == "echo a       b       c");
  CHECK(df.instructions[2].rest == "A=1 B=\"two words\"");
  auto plan = plan_stages(df);
  REQUIRE(plan.stages.size() == 1);
  CHECK(plan.stages[0].name == "base");
  CHECK(plan.stages[0].body.size() == 2);
}

TEST_CASE("build parser: an escaped escape at the end is not a continuation") {
  auto df = parse_dockerfile("FROM x\nRUN echo a\\\\\nRUN echo b\n", "Dockerfile");
  REQUIRE(df.instructions.size() == 3);
  CHECK(df.instructions[1].rest == "echo a\\\\");
}

TEST_CASE("build parser: directives") {
  auto df = parse_dockerfile("# syntax=docker/dockerfile:1.7\n# escape=`\nFROM x\nRUN a `\n b\n", "Dockerfile");
  CHECK(df.syntax == "docker/dockerfile:1.7");
  CHECK(df.escape == '`');
  REQUIRE(df.instructions.size() == 2);
  CHECK(df.instructions[1].rest == "a  b");
  // After a comment or instruction, a directive is just a comment.
  auto late = parse_dockerfile("# hello\n# escape=`\nFROM x\nRUN a \\\n b\n", "Dockerfile");
  CHECK(late.escape == '\\');
  CHECK(late.instructions[1].rest == "a  b");
  CHECK(parse_dockerfile("# syntax = docker.io/docker/dockerfile:1@sha256:abc\nFROM x\n", "D").syntax.size() > 0);
  CHECK(error_of("# syntax=foo/bar:1\nFROM x\n").find("Dockerfile:1: # syntax=foo/bar:1") == 0);
  CHECK(error_of("# escape=x\nFROM x\n").find("Dockerfile:1: invalid escape token") == 0);
  CHECK(error_of("# escape=`\n# escape=\\\nFROM x\n").find("only one escape parser directive") != std::string::npos);
}

TEST_CASE("build parser: flags and JSON forms") {
  auto df = parse_dockerfile(
      "FROM --platform=linux/amd64 busybox\n"
      "COPY --from=build --chown=1:2 --chmod=\"755\" a b /dst/\n"
      "CMD [\"echo\", \"hi\"]\n"
      "ENTRYPOINT [\"broken\"\n"
      "RUN -- --not-a-flag\n",
      "Dockerfile");
  auto& from = df.instructions[0];
  CHECK(from.flag("platform") == "linux/amd64");
  auto& copy = df.instructions[1];
  CHECK(copy.flags.size() == 3);
  CHECK(copy.flag("from") == "build");
  CHECK(copy.flag("chmod") == "755");
  CHECK(copy.rest == "a b /dst/");
  CHECK(df.instructions[2].json);
  CHECK(df.instructions[2].json_args == std::vector<std::string>{"echo", "hi"});
  CHECK_FALSE(df.instructions[3].json);  // not valid JSON: the shell form
  CHECK(df.instructions[4].rest == "--not-a-flag");
  CHECK(error_of("FROM x\nCMD [\"a\", 1]\n").find("Dockerfile:2: when using JSON array syntax") == 0);
}

TEST_CASE("build parser: here-documents") {
  auto df = parse_dockerfile(
      "FROM x\n"
      "RUN <<EOF\n"
      "echo one\n"
      "echo two\n"
      "EOF\n"
      "COPY <<-\"A\" <<B /dst/\n"
      "\t\tindented $X\n"
      "\tA\n"
      "b body\n"
      "B\n"
      "RUN python3 <<'PY' > /out\n"
      "print(1)\n"
      "PY\n"
      "RUN echo '<<notheredoc'\n",
      "Dockerfile");
  REQUIRE(df.instructions.size() == 5);
  auto& run = df.instructions[1];
  REQUIRE(run.heredocs.size() == 1);
  CHECK(run.heredocs[0].name == "EOF");
  CHECK(run.heredocs[0].content == "echo one\necho two\n");
  CHECK(run.heredocs[0].expand);
  CHECK(run.end_line == 5);
  auto& copy = df.instructions[2];
  REQUIRE(copy.heredocs.size() == 2);
  CHECK(copy.heredocs[0].name == "A");
  CHECK(copy.heredocs[0].chomp);
  CHECK_FALSE(copy.heredocs[0].expand);
  CHECK(copy.heredocs[0].content == "indented $X\n");
  CHECK(copy.heredocs[1].content == "b body\n");
  CHECK(df.instructions[3].heredocs.size() == 1);
  CHECK_FALSE(df.instructions[3].heredocs[0].expand);
  CHECK(df.instructions[4].heredocs.empty());
  CHECK(error_of("FROM x\nRUN <<EOF\necho\n").find("Dockerfile:2: unterminated heredoc") == 0);
}

TEST_CASE("build parser: stages and global ARGs") {
  auto df = parse_dockerfile(
      "ARG BASE=busybox\n"
      "FROM $BASE AS build\n"
      "RUN true\n"
      "FROM build\n"
      "COPY --from=build /a /b\n",
      "Dockerfile");
  auto plan = plan_stages(df);
  CHECK(plan.global_args.size() == 1);
  REQUIRE(plan.stages.size() == 2);
  CHECK(plan.stages[0].name == "build");
  CHECK(plan.stages[1].name.empty());
  CHECK(plan.stages[1].index == 1);
}

TEST_CASE("build parser: errors name the file and line") {
  CHECK(error_of("FROM x\nFOO bar\n") == "Dockerfile:2: unknown instruction: FOO");
  CHECK(error_of("FROM x\nONBUILD RUN true\n").find("Dockerfile:2: ONBUILD is not supported") == 0);
  CHECK(error_of("RUN true\nFROM x\n").find("Dockerfile:1: RUN before the first FROM") == 0);
  CHECK(error_of("FROM x\nCOPY onlyone\n").find("Dockerfile:2: COPY requires at least two arguments") == 0);
  CHECK(error_of("FROM x\nCOPY --bogus=1 a b\n").find("Dockerfile:2: COPY: unknown flag: --bogus") == 0);
  CHECK(error_of("FROM x\nWORKDIR\n").find("Dockerfile:2: WORKDIR requires at least one argument") == 0);
  CHECK(error_of("FROM x AS a\nFROM y AS A\n").find("Dockerfile:2: duplicate stage name 'a'") == 0);
  CHECK(error_of("FROM x AS 1bad\n").find("invalid stage name") != std::string::npos);
  CHECK(error_of("FROM x y\n").find("FROM requires either one argument, or three") != std::string::npos);
  CHECK(error_of("FROM x\nSHELL /bin/bash -c\n").find("SHELL requires the arguments to be in JSON form") !=
        std::string::npos);
  CHECK(error_of("FROM x\nENV A\n").find("ENV must have two arguments") != std::string::npos);
  CHECK(error_of("FROM x\nLABEL a=1 b\n").find("can't find = in \"b\"") != std::string::npos);
  CHECK(error_of("FROM x\nHEALTHCHECK SOMETIMES\n").find("unknown type SOMETIMES") != std::string::npos);
  CHECK(error_of("FROM x\nRUN --security=insecure true\n").find("not supported") != std::string::npos);
  CHECK(error_of("# just a comment\n\n").find("Dockerfile:") == 0);
  CHECK(error_of("ARG A\n").find("no FROM instruction") != std::string::npos);
}

TEST_CASE("build parser: CRLF line endings and a BOM") {
  auto df = parse_dockerfile("\xEF\xBB\xBF# escape=\\\r\nFROM x\r\nRUN a \\\r\n  b\r\nCMD [\"c\"]\r\n", "Dockerfile");
  REQUIRE(df.instructions.size() == 3);
  CHECK(df.instructions[0].rest == "x");
  CHECK(df.instructions[1].rest == "a   b");
  CHECK(df.instructions[2].json);
}
