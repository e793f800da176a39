// libcurl transport for oci/registry_client.cpp (see oci/http.h).
#include "oci/http.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <exception>

#ifdef SBX_HAVE_CURL
#include <curl/curl.h>

#include "common/shared_lib.h"
#endif

namespace sbx::oci::http {

#ifdef SBX_HAVE_CURL
namespace {

/// The libcurl functions sbx calls, loaded with dlopen on the first Session
/// (not linked: libcurl's dependencies cost ~8 ms at every sbx start, and
/// only pull/push/login use it). The names are the libcurl API's
/// (https://curl.se/libcurl/c/allfuncs.html); curl.h still gives the types.
struct Curl {
  SharedLib lib{{"libcurl.so.4", "libcurl-gnutls.so.4"}, "libcurl4", "registry access (pull, push, login)"};
  CURLcode (*global_init)(long) = lib.fn<decltype(global_init)>("curl_global_init");
  CURL* (*easy_init)() = lib.fn<decltype(easy_init)>("curl_easy_init");
  void (*easy_cleanup)(CURL*) = lib.fn<decltype(easy_cleanup)>("curl_easy_cleanup");
  void (*easy_reset)(CURL*) = lib.fn<decltype(easy_reset)>("curl_easy_reset");
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = lib.fn<decltype(easy_setopt)>("curl_easy_setopt");
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = lib.fn<decltype(easy_getinfo)>("curl_easy_getinfo");
  CURLcode (*easy_perform)(CURL*) = lib.fn<decltype(easy_perform)>("curl_easy_perform");
  const char* (*easy_strerror)(CURLcode) = lib.fn<decltype(easy_strerror)>("curl_easy_strerror");
  curl_slist* (*slist_append)(curl_slist*, const char*) = lib.fn<decltype(slist_append)>("curl_slist_append");
  void (*slist_free_all)(curl_slist*) = lib.fn<decltype(slist_free_all)>("curl_slist_free_all");
  Curl() { global_init(CURL_GLOBAL_DEFAULT); }
};

/// Loads libcurl once per process (thread-safe: a C++11 static). Throws
/// sbx::Error naming the package when libcurl.so.4 is missing; the next call
/// tries again.
const Curl& curl() {
  static const Curl c;
  return c;
}

struct Ctx {
  const Request* req;
  Response* resp;
  CURL* h;
  std::exception_ptr err;
  bool too_big = false;
  uint64_t sent = 0;
  bool started = false;
};

bool ok_status(CURL* h) {
  long code = 0;
  curl().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  return code >= 200 && code < 300;
}

size_t on_header(char* p, size_t size, size_t n, void* ud) {
  auto* c = static_cast<Ctx*>(ud);
  std::string line(p, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    c->resp->headers.clear();  // a new answer (after a redirect or 100 Continue)
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon), value = line.substr(colon + 1);
  for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
  c->resp->headers[name] = value;
  return size * n;
}

size_t on_body(char* p, size_t size, size_t n, void* ud) {
  auto* c = static_cast<Ctx*>(ud);
  size_t len = size * n;
  try {
    if (c->req->sink && ok_status(c->h)) {
      if (!c->started && c->req->on_status) {
        long code = 0;
        curl().easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &code);
        c->req->on_status(code);
      }
      c->started = true;
      c->req->sink(std::string_view(p, len));
    } else if (c->req->sink) {
      // An error answer to a streamed request: keep its start for the message.
      size_t room = c->req->max_body > c->resp->body.size() ? c->req->max_body - c->resp->body.size() : 0;
      c->resp->body.append(p, std::min(room, len));
    } else {
      if (c->resp->body.size() + len > c->req->max_body) {
        c->too_big = true;
        return 0;
      }
      c->resp->body.append(p, len);
    }
  } catch (...) {
    c->err = std::current_exception();
    return 0;
  }
  return len;
}

size_t on_read(char* p, size_t size, size_t n, void* ud) {
  auto* c = static_cast<Ctx*>(ud);
  size_t want = size * n;
  if (c->req->body) {
    size_t left = c->req->body->size() - c->sent;
    size_t k = std::min(want, left);
    std::copy_n(c->req->body->data() + c->sent, k, p);
    c->sent += k;
    return k;
  }
  uint64_t left = c->req->body_size - c->sent;
  size_t k = static_cast<size_t>(std::min<uint64_t>(want, left));
  if (k == 0) return 0;
  ssize_t r = ::read(c->req->body_fd, p, k);
  if (r <= 0) return CURL_READFUNC_ABORT;
  c->sent += static_cast<uint64_t>(r);
  return static_cast<size_t>(r);
}

int on_xfer(void* ud, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* c = static_cast<Ctx*>(ud);
  if (c->req->on_progress) c->req->on_progress();
  return 0;
}

}  // namespace

Session::Session() {
  curl_ = curl().easy_init();
  if (!curl_) throw Error("cannot initialise libcurl");
}

Session::~Session() {
  if (curl_) curl().easy_cleanup(static_cast<CURL*>(curl_));
}

bool available() {
  try {
    curl();
    return true;
  } catch (const Error&) {
    return false;
  }
}

Response Session::perform(const Request& req) {
  const Curl& api = curl();
  CURL* h = static_cast<CURL*>(curl_);
  api.easy_reset(h);
  Response resp;
  Ctx c{&req, &resp, h, nullptr};
  curl_slist* hdrs = nullptr;
  for (const auto& s : req.headers) hdrs = api.slist_append(hdrs, s.c_str());
  char errbuf[CURL_ERROR_SIZE] = {0};
  api.easy_setopt(h, CURLOPT_URL, req.url.c_str());
  api.easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  api.easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  api.easy_setopt(h, CURLOPT_USERAGENT, "sbx/" SBX_VERSION);
  api.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  api.easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  api.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  api.easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  api.easy_setopt(h, CURLOPT_UNRESTRICTED_AUTH, 0L);  // credentials stay with their host
  api.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled transfer (under 1 byte/s for 60 s) fails and is retried with Range.
  api.easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  api.easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
  api.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  api.easy_setopt(h, CURLOPT_HEADERDATA, &c);
  api.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  api.easy_setopt(h, CURLOPT_WRITEDATA, &c);
  api.easy_setopt(h, CURLOPT_SSL_VERIFYPEER, req.tls_verify ? 1L : 0L);
  api.easy_setopt(h, CURLOPT_SSL_VERIFYHOST, req.tls_verify ? 2L : 0L);
  if (!req.ca_file.empty()) api.easy_setopt(h, CURLOPT_CAINFO, req.ca_file.c_str());
  if (req.on_progress) {
    api.easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    api.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_xfer);
    api.easy_setopt(h, CURLOPT_XFERINFODATA, &c);
  }
  if (!req.range_from.empty()) api.easy_setopt(h, CURLOPT_RANGE, (req.range_from + "-").c_str());
  if (req.method == "HEAD") {
    api.easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (req.method == "PUT" || req.method == "POST" || req.method == "PATCH") {
    api.easy_setopt(h, CURLOPT_UPLOAD, 1L);
    api.easy_setopt(h, CURLOPT_READFUNCTION, on_read);
    api.easy_setopt(h, CURLOPT_READDATA, &c);
    curl_off_t size = req.body ? static_cast<curl_off_t>(req.body->size()) : static_cast<curl_off_t>(req.body_size);
    api.easy_setopt(h, CURLOPT_INFILESIZE_LARGE, size);
    if (req.method != "PUT") api.easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  } else if (req.method != "GET") {
    api.easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  CURLcode rc = api.easy_perform(h);
  api.slist_free_all(hdrs);
  api.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.status);
  char* eff = nullptr;
  if (api.easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff) resp.url = eff;
  if (c.err) std::rethrow_exception(c.err);
  if (c.too_big)
    throw Error(req.method + " " + req.url + ": the answer is larger than " + std::to_string(req.max_body >> 20) +
                " MiB; refusing it (a hostile or broken registry)");
  if (rc != CURLE_OK) {
    bool tls = rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE;
    std::string msg = req.method + " " + req.url + ": " + (errbuf[0] ? errbuf : api.easy_strerror(rc));
    throw TransportError(msg, static_cast<int>(rc), tls);
  }
  return resp;
}

#else  // built without libcurl

Session::Session() {}
Session::~Session() {}
bool available() { return false; }
Response Session::perform(const Request& req) {
  throw Error("cannot reach " + req.url + ": this sbx was built without libcurl (registry support off); "
              "use 'skopeo copy' and 'sbx import', or a build with libcurl");
}

#endif

}  // namespace sbx::oci::http
