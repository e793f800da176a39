#include <doctest.h>
#include <unistd.h>

#include <string>

#include "common/error.h"
#include "common/shared_lib.h"
#include "oci/http.h"

using namespace sbx;

TEST_CASE("SharedLib names the package to install when the library is missing") {
  try {
    SharedLib lib({"libsbx-test-absent.so.9"}, "sbx-test-pkg", "the test feature");
    FAIL("a library that does not exist loaded");
  } catch (const Error& e) {
    std::string msg = e.what();
    CHECK(msg.find("the test feature") != std::string::npos);
    CHECK(msg.find("libsbx-test-absent.so.9") != std::string::npos);
    CHECK(msg.find("apt-get install sbx-test-pkg") != std::string::npos);
    CHECK(e.err() == ENOENT);
  }
  CHECK_FALSE(shared_lib_loadable({"libsbx-test-absent.so.9"}));
}

TEST_CASE("SharedLib takes the first soname that loads and resolves its functions") {
  SharedLib lib({"libsbx-test-absent.so.9", "libc.so.6"}, "libc6", "the test feature");
  CHECK(lib.soname() == "libc.so.6");
  auto my_getpid = lib.fn<pid_t (*)()>("getpid");
  CHECK(my_getpid() == ::getpid());
  CHECK_THROWS_WITH_AS(lib.fn<void (*)()>("sbx_no_such_function"), doctest::Contains("upgrade libc6"), Error);
}

TEST_CASE("the registry client loads libcurl on demand") {
  // sbx does not link libcurl (it is dlopen'd); a build with registry support
  // on a host with libcurl4 reports it available and can make a session.
  if (!oci::http::available()) return;
  oci::http::Session s;
  CHECK(shared_lib_loadable({"libcurl.so.4", "libcurl-gnutls.so.4"}));
}
