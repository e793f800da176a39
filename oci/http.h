// A minimal HTTP(S) client for the registry code, over libcurl (loaded with
// dlopen on first use, see common/shared_lib.h): one request at
// a time per Session (a Session keeps its connection alive between requests;
// use one per thread). Redirects are followed only to http/https, and curl
// never forwards an Authorization header to another host (curl >= 7.58).
// Built without libcurl (SBX_HAVE_CURL unset, e.g. some static builds), every
// request throws a clear sbx::Error.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace sbx::oci::http {

/// A transfer that failed below HTTP (DNS, connect, TLS, connection cut).
/// `curl_code` is libcurl's CURLcode; `bytes` how much body arrived first.
class TransportError : public Error {
 public:
  TransportError(const std::string& msg, int curl_code, bool tls) : Error(msg), curl_code(curl_code), tls(tls) {}
  int curl_code;
  bool tls;  ///< the TLS handshake failed (e.g. the server speaks plain HTTP)
};

struct Request {
  std::string method = "GET";              ///< GET, HEAD, PUT, POST, PATCH, DELETE
  std::string url;
  std::vector<std::string> headers;        ///< "Name: value"
  std::string range_from;                  ///< "N": sends Range: bytes=N-
  const std::string* body = nullptr;       ///< upload from memory
  int body_fd = -1;                        ///< or from a file (from its current offset)
  uint64_t body_size = 0;                  ///< bytes to send from body_fd
  /// Streamed body of a 2xx answer; throw from it to abort the transfer.
  std::function<void(std::string_view)> sink;
  /// Called once with the HTTP status before the first byte goes to `sink`
  /// (206: the Range was honoured; 200: the body starts at byte 0).
  std::function<void(long)> on_status;
  uint64_t max_body = 4u << 20;            ///< cap on a body kept in memory (over it: Error)
  bool tls_verify = true;
  std::string ca_file;                     ///< extra CA (else the system's)
  std::function<void()> on_progress;       ///< called now and then during a transfer
};

struct Response {
  long status = 0;
  std::map<std::string, std::string> headers;  ///< lower-case names, of the final answer
  std::string body;                             ///< when there was no sink, or an error answer (capped)
  std::string url;                              ///< the effective URL after redirects
};

/// One libcurl easy handle (not thread-safe; one per thread).
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  /// Performs `req`. Throws TransportError when no complete HTTP answer came,
  /// sbx::Error when the body is over max_body, and whatever `sink` threw.
  Response perform(const Request& req);

 private:
  void* curl_ = nullptr;
};

/// True when this sbx was built with libcurl.
bool available();

}  // namespace sbx::oci::http
