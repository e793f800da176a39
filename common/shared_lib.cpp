#include "common/shared_lib.h"

#include <dlfcn.h>

#include "common/error.h"

namespace sbx {

SharedLib::SharedLib(const std::vector<std::string>& sonames, const std::string& package, const std::string& feature)
    : package_(package), feature_(feature) {
  std::string why;
  for (const auto& name : sonames) {
    // RTLD_LOCAL: its symbols do not leak into later dlopens; RTLD_NOW: a
    // missing dependency fails here, with a message, not at the first call.
    handle_ = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      soname_ = name;
      return;
    }
    const char* e = ::dlerror();
    if (!why.empty()) why += "; ";
    why += e ? e : name + ": cannot load";
  }
  throw Error(feature + " needs " + (sonames.empty() ? package : sonames.front()) + ", which cannot be loaded (" + why +
                  "); install it: apt-get install " + package,
              ENOENT);
}

void* SharedLib::symbol(const char* name) const {
  ::dlerror();
  void* p = ::dlsym(handle_, name);
  if (!p) {
    const char* e = ::dlerror();
    throw Error(feature_ + ": " + soname_ + " has no " + name + " (" + (e ? e : "symbol not found") +
                    "); it is too old for sbx: upgrade " + package_,
                ENOENT);
  }
  return p;
}

bool shared_lib_loadable(const std::vector<std::string>& sonames) noexcept {
  for (const auto& name : sonames)
    if (::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return true;
  return false;
}

}  // namespace sbx
