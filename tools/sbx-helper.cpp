// sbx-helper: the program of sbx's fresh helpers (runtime/linux/self_exec.h)
// when sbx was built with it: what `sbx serve` execs to join a sandbox for
// an exec or to clone a new sandbox's init, instead of a fresh image of the
// whole of sbx.
//
//   sbx-helper __sbx-helper exec REQUEST_FD
//   sbx-helper __sbx-helper init REQUEST_FD ANSWER_FD
//
// Only the native backend's helper code and what it calls (the layers below
// it), linked static-pie: a fresh sbx (13 shared libraries, ~40 MB of text)
// took ~2 ms to start and exit, this ~0.4 ms, and the exec is on every
// `docker exec` and E2B command's path. Embedded into sbx at build time
// (cmake/embed_binary.cmake), so there is nothing to install; a build
// without it (sanitizers, fuzzing) runs the copy of sbx instead.
// Exits 125 with a message for a command line no sbx made.
#include "runtime/native/fresh_helper.h"

int main(int argc, char** argv) { return sbx::runtime::run_fresh_helper(argc, argv); }
