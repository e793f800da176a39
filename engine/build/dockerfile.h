// The Dockerfile parser: text -> instructions -> stages, as the Dockerfile
// reference (https://docs.docker.com/reference/dockerfile/) and BuildKit's
// default frontend (frontend/dockerfile/parser, instructions) read it.
//
//   - parser directives on the first lines (`# syntax=`, `# escape=`), each
//     once; `# syntax` must name the default frontend (docker/dockerfile);
//   - comments (a line whose first non-blank character is #), blank lines,
//     line continuations with the escape character (comment lines inside a
//     continued instruction are skipped);
//   - instruction keywords in any case; `--flag=value` words after the keyword;
//     the JSON (exec) form ["a", "b"] where the instruction has one;
//   - here-documents (<<EOF, <<-EOF, <<"EOF") for RUN, COPY and ADD;
//   - stages: FROM ... [AS name] starts one; ARGs before the first FROM are
//     the global ones.
//
// Errors name the file and line ("Dockerfile:7: unknown instruction: FOO")
// and carry exit code 125. What sbx does not support (ONBUILD, another
// frontend) is an error naming the line too, never silently ignored.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sbx::build {

/// A here-document of RUN/COPY/ADD.
struct Heredoc {
  std::string name;     ///< the delimiter word, quotes removed ("EOF", "file.txt")
  std::string content;  ///< the body, each line with its newline; tabs stripped for <<-
  bool expand = true;   ///< the delimiter was unquoted: variables in the body are substituted
  bool chomp = false;   ///< <<- (leading tabs removed)
};

/// One instruction as written.
struct Instruction {
  std::string keyword;             ///< upper case: FROM, RUN, COPY, ...
  int line = 0;                    ///< first line, 1-based
  int end_line = 0;                ///< last line (continuations and heredocs included)
  std::string original;            ///< the logical line: continuations joined, keyword included
  std::vector<std::string> flags;  ///< "--name=value" or "--name", quotes removed, in order
  std::string rest;                ///< what follows the keyword and flags, trimmed
  bool json = false;               ///< `rest` was a JSON array of strings (exec form)
  std::vector<std::string> json_args;  ///< its strings
  std::vector<Heredoc> heredocs;

  /// The values of --NAME (each occurrence; "--name" alone gives "").
  std::vector<std::string> flag_values(std::string_view name) const;
  /// The one value of --NAME; `found` says whether it was given. Throws when
  /// given twice.
  std::string flag(std::string_view name, bool* found = nullptr) const;
};

/// A parsed Dockerfile.
struct Dockerfile {
  std::string path;         ///< for messages ("Dockerfile", "build/app.Dockerfile")
  char escape = '\\';
  std::string syntax;       ///< `# syntax=` value; empty when absent
  std::vector<Instruction> instructions;
};

/// Parses `text`. `path` names the file in errors. Throws sbx::Error (125):
/// "PATH:LINE: msg" for a malformed directive, a JSON form with a non-string,
/// an unterminated here-document, a file with no instructions, a `# syntax`
/// of another frontend.
Dockerfile parse_dockerfile(std::string_view text, const std::string& path);

/// One build stage: FROM and the instructions up to the next FROM.
struct Stage {
  size_t index = 0;          ///< 0-based position among the stages
  std::string name;          ///< AS NAME, lower case; empty when unnamed
  const Instruction* from = nullptr;
  std::vector<const Instruction*> body;
};

/// A Dockerfile split into stages. Points into the Dockerfile, which must
/// outlive it.
struct StagePlan {
  std::vector<const Instruction*> global_args;  ///< ARGs before the first FROM
  std::vector<Stage> stages;
};

/// Splits into stages and checks each instruction: a known keyword with the
/// arguments and flags it allows (unknown or unsupported: an error naming the
/// line, e.g. ONBUILD, RUN --security=insecure, ADD of a git repository is
/// checked at run time), only ARG before the first FROM, names of stages
/// unique. Throws sbx::Error (125) "PATH:LINE: ...".
StagePlan plan_stages(const Dockerfile& df);

/// "PATH:LINE: msg" for an error about `ins`.
std::string at(const Dockerfile& df, const Instruction& ins, const std::string& msg);

}  // namespace sbx::build
