// Variable substitution in Dockerfile instructions, as the Dockerfile
// reference describes it ("Environment replacement") and BuildKit's shell
// lexer does it (frontend/dockerfile/shell/lex.go): $VAR and ${VAR}, the
// forms ${VAR:-word} ${VAR-word} ${VAR:+word} ${VAR+word} ${VAR:?msg}
// ${VAR?msg}, the pattern forms ${VAR#pat} ${VAR##pat} ${VAR%pat} ${VAR%%pat}
// ${VAR/pat/repl} ${VAR//pat/repl}; single quotes keep everything literal,
// double quotes allow substitution, the escape character (\ or `) escapes the
// next character. Used for ADD, COPY, ENV, EXPOSE, FROM, LABEL, STOPSIGNAL,
// USER, VOLUME, WORKDIR, ARG and the values of instruction flags; never for
// RUN, CMD and ENTRYPOINT (their shell does it).
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::build {

/// The variables an instruction sees: name -> value (an ARG without a value
/// is absent: it is unset).
using Vars = std::map<std::string, std::string>;

/// One expansion: the variables it may use and how it treats quotes.
struct Expander {
  const Vars* vars = nullptr;
  char escape = '\\';
  /// Quotes are ordinary characters (COPY heredoc bodies).
  bool skip_quotes = false;
  /// Names of variables it read, set or not (for cache keys); may be null.
  std::set<std::string>* used = nullptr;

  /// `in` with variables substituted and quotes and escapes removed, as one
  /// string (spaces kept). Throws sbx::Error ("bad substitution", "missing
  /// '}'", "unterminated quote", ${VAR?msg} of an unset VAR) without
  /// location: the caller adds file and line.
  std::string word(std::string_view in) const;
  /// The same, split into words at unquoted white space after substitution
  /// (a value with spaces from an unquoted $VAR makes several words).
  std::vector<std::string> words(std::string_view in) const;
};

/// Whether `name` can be a variable name: [A-Za-z_][A-Za-z0-9_]*.
bool valid_var_name(std::string_view name);

}  // namespace sbx::build
