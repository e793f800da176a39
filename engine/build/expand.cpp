#include "engine/build/expand.h"

#include <cctype>

#include "common/error.h"

namespace sbx::build {

namespace {

constexpr int kEof = -1;

/// Whether `text` matches the shell pattern `pat` (* any string, ? one
/// character, \ escapes the next; no bracket expressions, as BuildKit's).
bool glob_match(std::string_view pat, std::string_view text) {
  size_t p = 0, t = 0, star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pat.size() && pat[p] == '*') {
      star_p = p++;
      star_t = t;
      continue;
    }
    if (p < pat.size()) {
      char want = pat[p];
      size_t adv = 1;
      bool any = want == '?';
      if (want == '\\' && p + 1 < pat.size()) {
        want = pat[p + 1];
        adv = 2;
      }
      if (any || want == text[t]) {
        p += adv;
        ++t;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p + 1;
    t = ++star_t;
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

/// Characters of one word being scanned, and what it produced.
class Scanner {
 public:
  Scanner(const Expander& e, std::string_view in) : e_(e), in_(in) {}

  /// Processes up to `stop` (or the end when kEof); returns the string and
  /// fills `words` with the white-space split words.
  std::string process(int stop, bool raw_escapes, std::vector<std::string>* words) {
    std::string result;
    std::string word;
    bool in_word = false;
    auto add_split = [&](const std::string& s) {
      for (char c : s) {
        if (std::isspace(static_cast<unsigned char>(c))) {
          if (in_word) {
            if (words) words->push_back(word);
            word.clear();
            in_word = false;
          }
        } else {
          word += c;
          in_word = true;
        }
      }
    };
    auto add_raw = [&](const std::string& s) {
      word += s;
      in_word = true;
    };
    while (peek() != kEof) {
      int ch = peek();
      if (stop != kEof && ch == stop) {
        next();
        if (in_word && words) words->push_back(word);
        return result;
      }
      if (ch == '$') {
        std::string v = dollar();
        result += v;
        add_split(v);
      } else if (!e_.skip_quotes && ch == '\'') {
        std::string v = single_quote();
        result += v;
        add_raw(v);
      } else if (!e_.skip_quotes && ch == '"') {
        std::string v = double_quote();
        result += v;
        add_raw(v);
      } else {
        next();
        if (ch == e_.escape) {
          if (raw_escapes) {
            result += static_cast<char>(ch);
            add_raw(std::string(1, static_cast<char>(ch)));
          }
          ch = next();
          if (ch == kEof) break;
          add_raw(std::string(1, static_cast<char>(ch)));
        } else {
          add_split(std::string(1, static_cast<char>(ch)));
        }
        result += static_cast<char>(ch);
      }
    }
    if (stop != kEof)
      throw Error(std::string("unexpected end of statement while looking for matching ") + static_cast<char>(stop));
    if (in_word && words) words->push_back(word);
    return result;
  }

 private:
  int peek() const { return pos_ < in_.size() ? static_cast<unsigned char>(in_[pos_]) : kEof; }
  int next() { return pos_ < in_.size() ? static_cast<unsigned char>(in_[pos_++]) : kEof; }

  std::string single_quote() {
    next();
    std::string r;
    for (;;) {
      int ch = next();
      if (ch == kEof) throw Error("unexpected end of statement while looking for matching single-quote");
      if (ch == '\'') return r;
      r += static_cast<char>(ch);
    }
  }

  std::string double_quote() {
    next();
    std::string r;
    for (;;) {
      int ch = peek();
      if (ch == kEof) throw Error("unexpected end of statement while looking for matching double-quote");
      if (ch == '"') {
        next();
        return r;
      }
      if (ch == '$') {
        r += dollar();
        continue;
      }
      next();
      if (ch == e_.escape) {
        int n = peek();
        if (n == kEof) continue;  // a lone escape at the end is dropped
        if (n == '"' || n == '$' || n == e_.escape) ch = next();
      }
      r += static_cast<char>(ch);
    }
  }

  std::string name() {
    std::string n;
    int ch = peek();
    if (ch != kEof && std::isdigit(ch)) {
      while (peek() != kEof && std::isdigit(peek())) n += static_cast<char>(next());
      return n;
    }
    if (ch == '@' || ch == '*' || ch == '#' || ch == '?' || ch == '-' || ch == '$' || ch == '!' || ch == '0')
      return std::string(1, static_cast<char>(next()));
    while (peek() != kEof && (std::isalnum(peek()) || peek() == '_')) n += static_cast<char>(next());
    return n;
  }

  bool get(const std::string& n, std::string& value) const {
    if (e_.used) e_.used->insert(n);
    if (!e_.vars) return false;
    auto it = e_.vars->find(n);
    if (it == e_.vars->end()) return false;
    value = it->second;
    return true;
  }

  std::string dollar() {
    next();  // '$'
    if (peek() != '{') {
      std::string n = name();
      if (n.empty()) return "$";
      std::string v;
      get(n, v);
      return v;
    }
    next();  // '{'
    int c = peek();
    if (c == kEof) throw Error("syntax error: missing '}'");
    if (c == '{' || c == '}' || c == ':') throw Error("syntax error: bad substitution");
    std::string n = name();
    int ch = next();
    if (ch == '}') {
      std::string v;
      get(n, v);
      return v;
    }
    if (n.empty()) throw Error("syntax error: bad substitution");
    bool null_is_unset = false;
    if (ch == ':') {
      null_is_unset = true;
      ch = next();
    }
    if (ch == '-' || ch == '+' || ch == '?' || (!null_is_unset && (ch == '#' || ch == '%'))) {
      bool raw = ch == '#' || ch == '%';
      std::string word;
      try {
        word = process('}', raw, nullptr);
      } catch (const Error&) {
        throw Error("syntax error: missing '}'");
      }
      std::string value;
      bool set = get(n, value);
      switch (ch) {
        case '-':
          return (!set || (null_is_unset && value.empty())) ? word : value;
        case '+':
          return (!set || (null_is_unset && value.empty())) ? "" : word;
        case '?':
          if (!set) throw Error(n + ": " + (word.empty() ? "is not allowed to be unset" : word));
          if (null_is_unset && value.empty()) throw Error(n + ": " + (word.empty() ? "is not allowed to be empty" : word));
          return value;
        default: {  // '#' prefix, '%' suffix; doubled: longest
          bool greedy = !word.empty() && word[0] == static_cast<char>(ch);
          if (greedy) word.erase(0, 1);
          if (ch == '#') {
            if (greedy) {
              for (size_t len = value.size() + 1; len-- > 0;)
                if (glob_match(word, std::string_view(value).substr(0, len))) return value.substr(len);
            } else {
              for (size_t len = 0; len <= value.size(); ++len)
                if (glob_match(word, std::string_view(value).substr(0, len))) return value.substr(len);
            }
          } else {
            if (greedy) {
              for (size_t start = 0; start <= value.size(); ++start)
                if (glob_match(word, std::string_view(value).substr(start))) return value.substr(0, start);
            } else {
              for (size_t start = value.size() + 1; start-- > 0;)
                if (glob_match(word, std::string_view(value).substr(start))) return value.substr(0, start);
            }
          }
          return value;
        }
      }
    }
    if (ch == '/' && !null_is_unset) {
      bool all = peek() == '/';
      if (all) next();
      std::string pat, repl;
      try {
        pat = process('/', true, nullptr);
      } catch (const Error&) {
        throw Error("syntax error: missing '/' in ${}");
      }
      try {
        repl = process('}', true, nullptr);
      } catch (const Error&) {
        throw Error("syntax error: missing '}'");
      }
      std::string value;
      get(n, value);
      if (pat.empty()) return value;
      std::string out;
      size_t i = 0;
      bool replaced = false;
      while (i <= value.size()) {
        size_t best = std::string_view::npos;
        if (!replaced || all)
          for (size_t len = value.size() - i + 1; len-- > 0;)  // longest match here
            if (glob_match(pat, std::string_view(value).substr(i, len))) {
              best = len;
              break;
            }
        if (best != std::string_view::npos && best > 0) {
          out += repl;
          i += best;
          replaced = true;
          continue;
        }
        if (i < value.size()) out += value[i];
        ++i;
      }
      return out;
    }
    throw Error(ErrorKind::Unsupported, std::string("unsupported modifier (") + (null_is_unset ? ":" : "") +
                (ch == kEof ? std::string() : std::string(1, static_cast<char>(ch))) + ") in substitution");
  }

  const Expander& e_;
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace

std::string Expander::word(std::string_view in) const {
  Scanner s(*this, in);
  return s.process(kEof, false, nullptr);
}

std::vector<std::string> Expander::words(std::string_view in) const {
  Scanner s(*this, in);
  std::vector<std::string> out;
  s.process(kEof, false, &out);
  return out;
}

bool valid_var_name(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace sbx::build
