// The languages of the SandboxFusion-compatible endpoint (docs/sandbox-fusion.md):
// for each of SandboxFusion's language names, the image its code runs in,
// the file the code is written to (in the sandbox's work dir), the compile
// command (none for interpreted languages) and the run command.
//
// Built-in defaults cover python, pytest, bash, cpp, nodejs, go, java and
// rust; `sbx serve --languages FILE` overrides them from a JSON object
// {"python": {"image": "REF", "file": "main.py", "compile": null,
// "run": ["python3", "main.py"]}, …}: an entry that gives only some keys
// keeps the built-in values of the others, a language the file does not
// name keeps its defaults, and a new name (with file and run) adds one.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sbx::server::sandbox_fusion {

struct Language {
  std::string image;                               ///< image reference (sbx pull / import it)
  std::string file;                                ///< source file name, relative to the work dir
  std::optional<std::vector<std::string>> compile; ///< argv; nullopt: no compile step
  std::vector<std::string> run;                    ///< argv; the request's "args" are appended
};

using LanguageTable = std::map<std::string, Language>;

/// The built-in table.
LanguageTable default_languages();

/// The built-in table with `path`'s entries over it (see above). Throws
/// sbx::Error naming the file and the entry: not JSON, an entry that is not
/// an object, a key other than image/file/compile/run, a wrong type, a new
/// language without file or run, a file name that is absolute or has "..".
LanguageTable load_languages(const std::string& path);

/// The same from the file's text (`what` names it in errors).
LanguageTable parse_languages(const std::string& text, const std::string& what);

/// SandboxFusion's language names (its request model's Literal): a request
/// naming another language gets 422, as from SandboxFusion; one of these
/// that the table lacks gets a SandboxError.
bool is_sandbox_fusion_language(const std::string& name);

}  // namespace sbx::server::sandbox_fusion
