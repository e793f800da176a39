// Variable substitution (engine/build/expand.h) and .dockerignore matching
// (engine/build/dockerignore.h), against the rules of the Dockerfile
// reference and docker's pattern matcher.
#include <doctest.h>

#include <string>

#include "common/error.h"
#include "engine/build/dockerignore.h"
#include "engine/build/expand.h"

using namespace sbx;
using namespace sbx::build;

namespace {

std::string x(const std::string& in, const Vars& v, char escape = '\\') {
  Expander e;
  e.vars = &v;
  e.escape = escape;
  return e.word(in);
}

}  // namespace

TEST_CASE("build expand: plain, braced and default forms") {
  Vars v{{"A", "a"}, {"EMPTY", ""}, {"P", "/usr/local/lib/python3.11"}};
  CHECK(x("$A", v) == "a");
  CHECK(x("${A}b", v) == "ab");
  CHECK(x("$Ab", v) == "");  // the name is "Ab"
  CHECK(x("x$UNSET-y", v) == "x-y");
  CHECK(x("${UNSET:-def}", v) == "def");
  CHECK(x("${EMPTY:-def}", v) == "def");
  CHECK(x("${EMPTY-def}", v) == "");
  CHECK(x("${UNSET-def}", v) == "def");
  CHECK(x("${A:+alt}", v) == "alt");
  CHECK(x("${EMPTY:+alt}", v) == "");
  CHECK(x("${EMPTY+alt}", v) == "alt");
  CHECK(x("${UNSET:+alt}", v) == "");
  CHECK(x("${UNSET:-$A$A}", v) == "aa");
  CHECK(x("${A?must be set}", v) == "a");
  CHECK_THROWS_WITH_AS(x("${UNSET?must be set}", v), "UNSET: must be set", Error);
  CHECK_THROWS_AS(x("${EMPTY:?}", v), Error);
  CHECK(x("$", v) == "$");
  CHECK(x("a$", v) == "a$");
}

TEST_CASE("build expand: pattern forms") {
  Vars v{{"P", "/usr/local/lib/python3.11"}, {"F", "archive.tar.gz"}};
  CHECK(x("${P#*/}", v) == "usr/local/lib/python3.11");
  CHECK(x("${P##*/}", v) == "python3.11");
  CHECK(x("${F%.*}", v) == "archive.tar");
  CHECK(x("${F%%.*}", v) == "archive");
  CHECK(x("${F/a/A}", v) == "Archive.tar.gz");
  CHECK(x("${F//a/A}", v) == "Archive.tAr.gz");
  CHECK(x("${F/.t?r/}", v) == "archive.gz");
}

TEST_CASE("build expand: quotes and escapes") {
  Vars v{{"A", "a b"}};
  CHECK(x("'$A'", v) == "$A");
  CHECK(x("\"$A\"", v) == "a b");
  CHECK(x("\\$A", v) == "$A");
  CHECK(x("\"\\$A\"", v) == "$A");
  CHECK(x("\"a\\b\"", v) == "a\\b");  // inside "", \ escapes only " $ and itself
  CHECK(x("`$A", v, '`') == "$A");
  CHECK_THROWS_AS(x("'open", v), Error);
  CHECK_THROWS_AS(x("\"open", v), Error);
  CHECK_THROWS_AS(x("${A", v), Error);
  CHECK_THROWS_AS(x("${}", v), Error);
  CHECK_THROWS_AS(x("${A:x}", v), Error);
}

TEST_CASE("build expand: words split after substitution, quoted spaces kept") {
  Vars v{{"A", "one two"}};
  Expander e;
  e.vars = &v;
  CHECK(e.words("$A three") == std::vector<std::string>{"one", "two", "three"});
  CHECK(e.words("\"$A\" three") == std::vector<std::string>{"one two", "three"});
  CHECK(e.words("a\\ b") == std::vector<std::string>{"a b"});
  CHECK(e.words("  ") .empty());
}

TEST_CASE("build expand: used variables are recorded") {
  Vars v{{"A", "1"}};
  std::set<std::string> used;
  Expander e;
  e.vars = &v;
  e.used = &used;
  e.word("$A ${B:-x} '$C'");
  CHECK(used == std::set<std::string>{"A", "B"});
  CHECK(valid_var_name("_a1"));
  CHECK_FALSE(valid_var_name("1a"));
  CHECK_FALSE(valid_var_name("a-b"));
}

TEST_CASE("build expand: heredoc bodies keep quotes") {
  Vars v{{"A", "x"}};
  Expander e;
  e.vars = &v;
  e.skip_quotes = true;
  CHECK(e.word("echo '$A' \"$A\"\n") == "echo 'x' \"x\"\n");
}

TEST_CASE("dockerignore: patterns, parents, exceptions, comments") {
  IgnoreMatcher m(
      "# comment\n"
      "\n"
      "  *.log  \n"
      "/build\n"
      "**/node_modules\n"
      "docs/**/*.md\n"
      "!docs/keep.md\n"
      "tmp?\n"
      "[ab].txt\n"
      "secrets/\n"
      "!secrets/public.txt\n");
  CHECK(m.excluded("x.log"));
  CHECK_FALSE(m.excluded("dir/x.log"));  // * does not cross '/'
  CHECK(m.excluded("build"));
  CHECK(m.excluded("build/out/a.o"));  // a parent matches
  CHECK_FALSE(m.excluded("src/build"));
  CHECK(m.excluded("node_modules/x"));
  CHECK(m.excluded("a/b/node_modules"));
  CHECK(m.excluded("docs/a.md"));
  CHECK(m.excluded("docs/x/y/a.md"));
  CHECK_FALSE(m.excluded("docs/keep.md"));
  CHECK(m.excluded("tmp1"));
  CHECK_FALSE(m.excluded("tmp12"));
  CHECK(m.excluded("a.txt"));
  CHECK_FALSE(m.excluded("c.txt"));
  CHECK(m.excluded("secrets/key"));
  CHECK_FALSE(m.excluded("secrets/public.txt"));
  CHECK_FALSE(m.excluded("."));
  CHECK_FALSE(m.excluded("main.py"));
  CHECK(m.has_exceptions());
}

TEST_CASE("dockerignore: cleaning, ** forms and errors") {
  auto m = IgnoreMatcher::from_patterns({"./a/../b", "c/**", "**"});
  CHECK(m.excluded("b"));
  CHECK(m.excluded("anything/at/all"));
  auto n = IgnoreMatcher::from_patterns({"c/**", "!c/keep"});
  CHECK(n.excluded("c/x"));
  CHECK_FALSE(n.excluded("c"));
  CHECK_FALSE(n.excluded("c/keep"));
  CHECK(ignore_pattern_match("a\\*b", "a*b"));
  CHECK_FALSE(ignore_pattern_match("a\\*b", "axb"));
  CHECK(ignore_pattern_match("[^a]x", "bx"));
  CHECK_FALSE(ignore_pattern_match("[^a]x", "ax"));
  CHECK_THROWS_AS(IgnoreMatcher("!\n"), Error);
  CHECK_THROWS_AS(IgnoreMatcher("[a-\n"), Error);
  CHECK(clean_path("a//b/../c/") == "a/c");
  CHECK(clean_path("") == ".");
  CHECK(clean_path("../x") == "../x");
  CHECK(clean_path("/../x") == "/x");
}
