// /containers/{id}/archive (GET, PUT, HEAD) and POST /commit.
#include "common/error.h"
#include "server/api.h"

namespace sbx::server {

void Api::container_archive(Connection& c, const Request& r, const std::string&) {
  c.send_error(501, "sbx serve does not implement " + r.method + " /containers/{id}/archive yet");
}

void Api::commit(Connection& c, const Request&) { c.send_error(501, "sbx serve does not implement POST /commit yet"); }

}  // namespace sbx::server
