// doctest's main, which also runs sbx's fresh helpers (runtime/linux/self_exec.h):
// a test that makes this process use them (test_fresh_helpers.cpp) execs
// this binary as the helper, as sbx execs itself.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest.h>

#include "runtime/native/fresh_helper.h"

int main(int argc, char** argv) {
  if (sbx::runtime::is_fresh_helper(argc, argv)) return sbx::runtime::run_fresh_helper(argc, argv);
  return doctest::Context(argc, argv).run();
}
