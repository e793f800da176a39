// Lazy loading of an optional shared library with dlopen(3)/dlsym(3).
//
// Why: a dynamically linked sbx that links libcurl and libnftables pays for
// their constructors and relocations (gnutls, krb5, ldap, ... ~8 ms measured)
// at every start, also in `sbx run`, which never calls them. sbx instead
// loads each one the first time a command needs it (pull/push/login,
// --network private). The headers are still used at compile time for the
// types and constants; only the function addresses come from dlsym.
#pragma once
#include <string>
#include <vector>

namespace sbx {

/// One dlopen'd library, open for the life of the process (never dlclosed:
/// libraries such as libcurl keep global state and atexit handlers).
class SharedLib {
 public:
  /// Opens the first of `sonames` (e.g. {"libcurl.so.4"}) that dlopen finds
  /// (RTLD_NOW | RTLD_LOCAL). `package` is the Debian package that ships it,
  /// `feature` what needs it; both go into the error. Throws sbx::Error with
  /// dlerror()'s text and "install PACKAGE (apt-get install PACKAGE)" when
  /// none loads.
  SharedLib(const std::vector<std::string>& sonames, const std::string& package, const std::string& feature);
  SharedLib(const SharedLib&) = delete;
  SharedLib& operator=(const SharedLib&) = delete;

  /// The address of `name` as a function pointer of type F. Throws
  /// sbx::Error (naming the library and the package) when the symbol is
  /// missing, e.g. a libcurl older than sbx needs.
  template <typename F>
  F fn(const char* name) const {
    return reinterpret_cast<F>(symbol(name));
  }

  const std::string& soname() const noexcept { return soname_; }

 private:
  void* symbol(const char* name) const;
  void* handle_ = nullptr;
  std::string soname_, package_, feature_;
};

/// Whether a library of `sonames` could be loaded by dlopen now (it stays
/// loaded: this is the same work as the first use). No throw.
bool shared_lib_loadable(const std::vector<std::string>& sonames) noexcept;

}  // namespace sbx
