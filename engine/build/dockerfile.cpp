#include "engine/build/dockerfile.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "engine/build/expand.h"

namespace sbx::build {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' || c == '\n'; }

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view trim(std::string_view s) {
  s = trim_left(s);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string upper(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

[[noreturn]] void fail(const std::string& path, int line, const std::string& msg) {
  throw Error(path + ":" + std::to_string(line) + ": " + msg);
}

/// `# name = value` on a directive line: name (lower case) and value; false
/// when the line is not of that form.
bool directive(std::string_view line, std::string& name, std::string& value) {
  if (line.empty() || line[0] != '#') return false;
  std::string_view s = trim_left(line.substr(1));
  size_t i = 0;
  if (i >= s.size() || !std::isalpha(static_cast<unsigned char>(s[i]))) return false;
  while (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i]))) ++i;
  name = lower(s.substr(0, i));
  s = trim_left(s.substr(i));
  if (s.empty() || s[0] != '=') return false;
  s = trim(s.substr(1));
  if (s.empty()) return false;
  value = std::string(s);
  return true;
}

/// A line ends with the escape character (then optional blanks), which is
/// not itself escaped: the instruction continues on the next line. Removes
/// it from `line` and returns true.
bool continues(std::string& line, char escape) {
  size_t end = line.size();
  while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
  if (end == 0 || line[end - 1] != escape) return false;
  // BuildKit's rule: the escape must not follow another escape ("\\" at the
  // end is a literal backslash), except when it stands alone on the line.
  if (end >= 2 && line[end - 2] == escape) return false;
  line.erase(end - 1);
  return true;
}

/// Words of `rest` split at white space outside quotes, quotes and escapes
/// kept (BuildKit's parseWords): the expansion removes them later.
std::vector<std::string> raw_words(std::string_view rest, char escape) {
  std::vector<std::string> words;
  std::string w;
  bool in_word = false, blank_ok = false;
  char quote = 0;
  for (size_t i = 0; i < rest.size(); ++i) {
    char c = rest[i];
    if (quote) {
      if (c == quote) quote = 0;
      if (c == escape && quote != '\'' && c != quote) {
        if (i + 1 == rest.size()) {
          quote = 0;
          continue;
        }
        w += c;
        c = rest[++i];
      }
      w += c;
      continue;
    }
    if (is_space(c)) {
      if (in_word && (blank_ok || !w.empty())) words.push_back(w);
      w.clear();
      in_word = blank_ok = false;
      continue;
    }
    in_word = true;
    if (c == '\'' || c == '"') {
      quote = c;
      blank_ok = true;
    } else if (c == escape) {
      if (i + 1 == rest.size()) continue;
      w += c;
      c = rest[++i];
    }
    w += c;
  }
  if (in_word && (blank_ok || !w.empty())) words.push_back(w);
  return words;
}

/// The --flags after the keyword (BuildKit's extractBuilderFlags): words
/// starting with "--", quotes and backslash escapes removed; "--" alone ends
/// them. Returns what follows.
std::string_view take_flags(std::string_view line, std::vector<std::string>& flags) {
  size_t pos = 0;
  for (;;) {
    while (pos < line.size() && is_space(line[pos])) ++pos;
    if (pos + 1 >= line.size() || line[pos] != '-' || line[pos + 1] != '-') return line.substr(pos);
    std::string w;
    char quote = 0;
    for (; pos < line.size(); ++pos) {
      char c = line[pos];
      if (quote) {
        if (c == quote) {
          quote = 0;
          continue;
        }
        if (c == '\\' && pos + 1 < line.size()) c = line[++pos];
        w += c;
        continue;
      }
      if (is_space(c)) break;
      if (c == '\'' || c == '"') {
        quote = c;
        continue;
      }
      if (c == '\\') {
        if (pos + 1 == line.size()) continue;
        c = line[++pos];
      }
      w += c;
    }
    if (w == "--") return line.substr(pos);
    flags.push_back(w);
  }
}

bool takes_heredocs(const std::string& keyword) { return keyword == "RUN" || keyword == "COPY" || keyword == "ADD"; }

/// The here-documents a RUN/COPY/ADD line opens: words like <<EOF, <<-EOF,
/// <<"EOF", 2<<EOF (BuildKit's `^(\d*)<<(-?)([^<]*)$`).
std::vector<Heredoc> heredocs_of(std::string_view args, char escape) {
  std::vector<Heredoc> out;
  for (const auto& w : raw_words(args, escape)) {
    size_t i = 0;
    while (i < w.size() && std::isdigit(static_cast<unsigned char>(w[i]))) ++i;
    if (w.compare(i, 2, "<<") != 0) continue;
    i += 2;
    Heredoc h;
    if (i < w.size() && w[i] == '-') {
      h.chomp = true;
      ++i;
    }
    std::string rest = w.substr(i);
    if (rest.empty() || rest.find('<') != std::string::npos) continue;
    Expander e;
    e.escape = '\\';
    std::vector<std::string> words;
    try {
      words = e.words(rest);
    } catch (const Error&) {
      continue;
    }
    if (words.size() != 1) continue;
    h.name = words[0];
    h.expand = rest.find('"') == std::string::npos && rest.find('\'') == std::string::npos;
    out.push_back(std::move(h));
  }
  return out;
}

/// Splits `text` into lines with their line endings.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t nl = text.find('\n', i);
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    out.push_back(text.substr(i, end - i));
    i = end;
  }
  return out;
}

std::string_view no_newline(std::string_view l) {
  while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.remove_suffix(1);
  return l;
}

bool is_comment(std::string_view l) {
  l = trim_left(no_newline(l));
  return !l.empty() && l[0] == '#';
}

/// Whether `syntax` names BuildKit's default frontend (docker/dockerfile,
/// any tag or digest), which sbx implements itself.
bool default_frontend(const std::string& syntax) {
  std::string s = syntax;
  for (const char* prefix : {"docker.io/", "index.docker.io/"})
    if (s.rfind(prefix, 0) == 0) s = s.substr(std::string(prefix).size());
  if (s.rfind("docker/dockerfile", 0) != 0) return false;
  std::string tail = s.substr(std::string("docker/dockerfile").size());
  return tail.empty() || tail[0] == ':' || tail[0] == '@';
}

}  // namespace

std::vector<std::string> Instruction::flag_values(std::string_view name) const {
  std::vector<std::string> out;
  for (const auto& f : flags) {
    std::string_view n = std::string_view(f).substr(2);
    size_t eq = n.find('=');
    if (n.substr(0, eq) == name) out.emplace_back(eq == std::string_view::npos ? "" : n.substr(eq + 1));
  }
  return out;
}

std::string Instruction::flag(std::string_view name, bool* found) const {
  auto v = flag_values(name);
  if (found) *found = !v.empty();
  if (v.size() > 1) throw Error(keyword + ": --" + std::string(name) + " is given more than once");
  return v.empty() ? "" : v[0];
}

std::string at(const Dockerfile& df, const Instruction& ins, const std::string& msg) {
  return df.path + ":" + std::to_string(ins.line) + ": " + msg;
}

Dockerfile parse_dockerfile(std::string_view text, const std::string& path) {
  Dockerfile df;
  df.path = path;
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  auto lines = lines_of(text);
  bool directives_done = false;
  std::set<std::string> seen;
  size_t i = 0;
  int lineno = 0;
  auto process = [&](std::string_view raw, bool strip_left) -> std::string {
    std::string_view l = no_newline(raw);
    if (strip_left) l = trim_left(l);
    if (!directives_done) {
      std::string name, value;
      if (!directive(l, name, value) || (name != "escape" && name != "syntax" && name != "check")) {
        directives_done = true;
      } else {
        if (!seen.insert(name).second) fail(path, lineno, "only one " + name + " parser directive can be used");
        if (name == "escape") {
          if (value != "\\" && value != "`")
            fail(path, lineno, "invalid escape token '" + value + "' does not match ` or \\");
          df.escape = value[0];
        } else if (name == "syntax") {
          df.syntax = value;
          if (!default_frontend(value))
            fail(path, lineno,
                 "# syntax=" + value +
                     ": sbx build has its own Dockerfile frontend (the docker/dockerfile:1 syntax) and "
                     "cannot run another one; remove the line or use # syntax=docker/dockerfile:1");
        }
      }
    }
    if (!l.empty() && l[0] == '#') return "";
    return std::string(l);
  };
  while (i < lines.size()) {
    ++lineno;
    std::string line = process(lines[i++], true);
    const int start = lineno;
    bool more = continues(line, df.escape);
    if (!more && line.empty()) continue;
    while (more && i < lines.size()) {
      std::string_view raw = lines[i++];
      ++lineno;
      std::string next = process(raw, false);
      if (is_comment(raw)) continue;
      if (trim(next).empty()) continue;  // empty continuation line
      more = continues(next, df.escape);
      line += next;
    }
    Instruction ins;
    ins.line = start;
    ins.original = std::string(trim(line));
    std::string_view s = ins.original;
    size_t sp = 0;
    while (sp < s.size() && !is_space(s[sp])) ++sp;
    ins.keyword = upper(s.substr(0, sp));
    std::string_view args = take_flags(s.substr(sp), ins.flags);
    ins.rest = std::string(trim(args));
    if (!ins.rest.empty() && ins.rest[0] == '[') {
      try {
        auto j = nlohmann::json::parse(ins.rest);
        if (j.is_array()) {
          for (const auto& e : j) {
            if (!e.is_string())
              fail(path, start, "when using JSON array syntax, arrays must be comprised of strings only");
            ins.json_args.push_back(e.get<std::string>());
          }
          ins.json = true;
        }
      } catch (const nlohmann::json::exception&) {
        // Not JSON: the shell form, as written.
      }
    }
    if (takes_heredocs(ins.keyword) && !ins.json) {
      for (auto& h : heredocs_of(ins.rest, df.escape)) {
        bool done = false;
        while (i < lines.size()) {
          std::string_view raw = lines[i++];
          ++lineno;
          std::string_view cand = no_newline(raw);
          if (h.chomp) cand = cand.substr(std::min(cand.find_first_not_of('\t'), cand.size()));
          if (cand == h.name) {
            done = true;
            break;
          }
          std::string body(raw);
          if (h.chomp) body.erase(0, std::min(body.find_first_not_of('\t'), body.size()));
          if (body.empty() || body.back() != '\n') body += '\n';
          h.content += body;
        }
        if (!done) fail(path, start, "unterminated heredoc <<" + h.name + " (no line '" + h.name + "' ends it)");
        ins.heredocs.push_back(std::move(h));
      }
    }
    ins.end_line = lineno;
    df.instructions.push_back(std::move(ins));
  }
  if (df.instructions.empty()) fail(path, std::max(lineno, 1), "file with no instructions");
  return df;
}

namespace {

struct Rule {
  std::set<std::string> flags;  ///< allowed --flags
};

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> r = {
      {"FROM", {{"platform"}}},
      {"RUN", {{"mount", "network", "security"}}},
      {"CMD", {}},
      {"ENTRYPOINT", {}},
      {"SHELL", {}},
      {"COPY", {{"from", "chown", "chmod", "link", "exclude", "parents"}}},
      {"ADD", {{"chown", "chmod", "checksum", "link", "exclude", "keep-git-dir"}}},
      {"ENV", {}},
      {"ARG", {}},
      {"LABEL", {}},
      {"MAINTAINER", {}},
      {"WORKDIR", {}},
      {"USER", {}},
      {"EXPOSE", {}},
      {"VOLUME", {}},
      {"STOPSIGNAL", {}},
      {"HEALTHCHECK", {{"interval", "timeout", "start-period", "start-interval", "retries"}}},
  };
  return r;
}

bool valid_stage_name(const std::string& n) {
  if (n.empty() || !std::islower(static_cast<unsigned char>(n[0]))) return false;
  for (char c : n)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
          c == '_' || c == '.'))
      return false;
  return true;
}

void check(const Dockerfile& df, const Instruction& ins) {
  auto err = [&](const std::string& m) { throw Error(at(df, ins, m)); };
  if (ins.keyword == "ONBUILD")
    err("ONBUILD is not supported by sbx build (its triggers would run in images built from this one); "
        "remove it or run the instruction in the child image's Dockerfile");
  auto it = rules().find(ins.keyword);
  if (it == rules().end()) err("unknown instruction: " + ins.keyword);
  for (const auto& f : ins.flags) {
    std::string name = f.substr(2, f.find('=') == std::string::npos ? std::string::npos : f.find('=') - 2);
    if (!it->second.flags.count(name))
      err(ins.keyword + ": unknown flag: --" + name +
          (it->second.flags.empty() ? " (" + ins.keyword + " takes no flags)" : ""));
  }
  const bool empty = ins.json ? ins.json_args.empty() : ins.rest.empty();
  const std::string& k = ins.keyword;
  if (k == "COPY" && !ins.flag_values("parents").empty())
    err("COPY --parents is not supported by sbx build");
  if (k == "RUN") {
    std::string sec = ins.flag("security");
    if (!sec.empty() && sec != "sandbox")
      err("RUN --security=" + sec + " is not supported: build steps always run in a sandbox");
  }
  if ((k == "RUN" || k == "ENV" || k == "ARG" || k == "LABEL" || k == "WORKDIR" || k == "USER" || k == "EXPOSE" ||
       k == "VOLUME" || k == "STOPSIGNAL" || k == "FROM" || k == "MAINTAINER" || k == "HEALTHCHECK") &&
      empty)
    err(k + " requires at least one argument");
  if ((k == "CMD" || k == "ENTRYPOINT") && empty && !ins.json) err(k + " requires at least one argument");
  if (k == "SHELL" && (!ins.json || ins.json_args.empty()))
    err("SHELL requires the arguments to be in JSON form, e.g. SHELL [\"/bin/bash\", \"-c\"]");
  if ((k == "COPY" || k == "ADD") && (ins.json ? ins.json_args.size() : raw_words(ins.rest, df.escape).size()) < 2)
    err(k + " requires at least two arguments: SOURCE... DEST");
  if ((k == "WORKDIR" || k == "USER" || k == "STOPSIGNAL") && ins.json)
    err(k + " takes one value, not a JSON array");
  if (k == "ENV" || k == "LABEL") {
    auto words = raw_words(ins.rest, df.escape);
    if (!words.empty() && words[0].find('=') == std::string::npos) {
      size_t sp = ins.rest.find_first_of(" \t");
      if (sp == std::string::npos) err(k + " must have two arguments (NAME VALUE) or the form NAME=VALUE");
    } else {
      for (const auto& w : words)
        if (w.find('=') == std::string::npos)
          err(k + ": syntax error - can't find = in \"" + w + "\"; the form is NAME=VALUE");
    }
  }
  if (k == "HEALTHCHECK") {
    size_t sp = ins.rest.find_first_of(" \t");
    std::string type = upper(ins.rest.substr(0, sp));
    if (type == "NONE") {
      if (sp != std::string::npos && !trim(std::string_view(ins.rest).substr(sp)).empty())
        err("HEALTHCHECK NONE takes no arguments");
      if (!ins.flags.empty()) err("HEALTHCHECK NONE takes no flags");
    } else if (type == "CMD") {
      if (sp == std::string::npos || trim(std::string_view(ins.rest).substr(sp)).empty())
        err("HEALTHCHECK CMD requires a command");
    } else {
      err("HEALTHCHECK: unknown type " + type + " (use CMD or NONE)");
    }
  }
}

}  // namespace

StagePlan plan_stages(const Dockerfile& df) {
  StagePlan plan;
  std::set<std::string> names;
  for (const auto& ins : df.instructions) {
    check(df, ins);
    if (ins.keyword == "FROM") {
      auto words = raw_words(ins.rest, df.escape);
      Stage st;
      st.index = plan.stages.size();
      st.from = &ins;
      if (words.size() == 3 && lower(words[1]) == "as") {
        st.name = lower(words[2]);
        if (!valid_stage_name(st.name))
          throw Error(ErrorKind::InvalidArgument, at(df, ins, "invalid stage name '" + words[2] +
                                      "': it must start with a letter and hold only letters, digits, '-', '_' and '.'"));
        if (!names.insert(st.name).second) throw Error(at(df, ins, "duplicate stage name '" + st.name + "'"));
      } else if (words.size() != 1) {
        throw Error(at(df, ins, "FROM requires either one argument, or three: FROM <image> [AS <name>]"));
      }
      plan.stages.push_back(std::move(st));
      continue;
    }
    if (plan.stages.empty()) {
      if (ins.keyword != "ARG")
        throw Error(at(df, ins, ins.keyword + " before the first FROM: only ARG may come before FROM"));
      plan.global_args.push_back(&ins);
      continue;
    }
    plan.stages.back().body.push_back(&ins);
  }
  if (plan.stages.empty()) throw Error(df.path + ": no FROM instruction: a Dockerfile must start a stage with FROM");
  return plan;
}

}  // namespace sbx::build
