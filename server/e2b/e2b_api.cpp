// The E2B endpoint's routing, authentication and REST lifecycle API
// (server/e2b/e2b.h). The REST subset follows E2B's openapi.yml as the `e2b`
// SDKs call it: POST /sandboxes (and /v2/sandboxes: the "/v2" prefix reaches
// the handlers as the version prefix Request strips), GET /sandboxes,
// GET/DELETE /sandboxes/{id}, POST /sandboxes/{id}/timeout, /refreshes,
// /connect, GET /sandboxes/{id}/metrics. Errors are E2B's {"code", "message"}.
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

#include "common/error.h"
#include "common/json_number.h"
#include "common/log.h"
#include "runtime/state.h"
#include "server/error_status.h"
#include "server/rfc3339.h"
#include "engine/sandbox_options.h"
#include "engine/trajectory_ops.h"
#include "server/e2b/e2b.h"
#include "server/reaper.h"

namespace sbx::server {

using nlohmann::json;

namespace {

/// The envd version sbx answers as: new enough that the SDK sends no default
/// user "user" (< 0.4.0 would) and offers closeStdin (0.5.2); older than the
/// octet-stream uploads (0.5.7) and file metadata (0.6.2) sbx does not serve.
constexpr const char* kEnvdVersion = "0.5.2";
/// E2B's default sandbox lifetime when create names none (seconds).
constexpr int64_t kDefaultTimeoutS = 300;
/// The longest timeout accepted (E2B's Pro limit: 24 h).
constexpr int64_t kMaxTimeoutS = 24 * 3600;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

/// E2B's REST error body.
struct RestError {
  int status;
  std::string message;
};

/// envd's paths (the rest is the REST API).
bool is_envd(const std::string& p) {
  return p == "/files" || p == "/health" || p.rfind("/process.Process/", 0) == 0 ||
         p.rfind("/filesystem.Filesystem/", 0) == 0;
}

/// envd's Connect paths (not /files, /health).
bool is_rpc(const std::string& p) { return is_envd(p) && p != "/files" && p != "/health"; }

void send_rest_error(Connection& c, int status, const std::string& msg) {
  c.send(status, json{{"code", status}, {"message", msg}}.dump());
}

/// The request's `key`, a number of seconds (fractions kept), in ms; `def_ms`
/// when it is absent or null. Throws RestError 400 when it is not a number of
/// 0..kMaxTimeoutS seconds.
int64_t timeout_ms(const json& body, const char* key, int64_t def_ms) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return def_ms;
  if (!it->is_number()) throw RestError{400, std::string("'") + key + "' must be a number of seconds"};
  auto ms = json_number::seconds_to_ms(*it, static_cast<double>(kMaxTimeoutS));
  if (!ms) throw RestError{400, std::string("'") + key + "' must be 0.." + std::to_string(kMaxTimeoutS) + " seconds"};
  return ms->count();
}

}  // namespace

E2bApi::E2bApi(engine::Config cfg, std::string default_runtime, std::string api_key)
    : engine_(std::move(cfg)), runtime_(std::move(default_runtime)), api_key_(std::move(api_key)) {
  reaper_ = std::thread([this] { reap_loop(); });
}

E2bApi::~E2bApi() { shutdown(); }

void E2bApi::shutdown() {
  std::vector<std::shared_ptr<E2bSandbox>> live;
  {
    std::lock_guard lk(mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [id, sb] : sandboxes_)
      if (!sb->gone) live.push_back(sb);
  }
  cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  // E2B sandboxes live until their timeout, which only this server enforces:
  // they go with it rather than outlive their deadline unwatched.
  for (auto& sb : live) {
    log::info("serve e2b: shutting down: sandbox " + sb->id + " killed");
    kill_sandbox(sb);
  }
}

std::optional<HttpError> E2bApi::authorize(const Request& r) {
  if (!is_envd(r.path)) {
    if (same_secret(r.header("x-api-key"), api_key_)) return std::nullopt;
    return HttpError{401, "sbx serve --e2b: send the serve token as the API key (E2B_API_KEY)"};
  }
  std::string sid = r.header("e2b-sandbox-id");
  std::string token;
  {
    std::lock_guard lk(mu_);
    auto it = sandboxes_.find(sid);
    if (it != sandboxes_.end() && !it->second->gone) token = it->second->access_token;
  }
  // 502: what E2B's proxy answers for a sandbox that is gone (the SDK's
  // isRunning() reads it as "not running").
  if (token.empty())
    return HttpError{is_rpc(r.path) ? connect_http_status("unavailable") : 502,
                     "sandbox '" + sid + "' is not running (E2b-Sandbox-Id)"};
  if (!same_secret(r.header("x-access-token"), token))
    return HttpError{401, "missing or wrong X-Access-Token for sandbox " + sid};
  return std::nullopt;
}

BodyRule E2bApi::body_rule(const Request& r) {
  if (r.method == "POST" && r.path == "/files") return {kMaxArchiveBody, true};
  return {kMaxJsonBody, false};
}

std::string E2bApi::error_body(const Request* head, int status, const std::string& message) {
  if (head && is_rpc(head->path)) {
    const char* code = status == 401   ? "unauthenticated"
                       : status == 413 ? "resource_exhausted"
                       : status == 408 ? "deadline_exceeded"
                       : status == 502 || status == 503 ? "unavailable"
                       : status < 500  ? "invalid_argument"
                                       : "internal";
    return json{{"code", code}, {"message", message}}.dump();
  }
  return json{{"code", status}, {"message", message}}.dump();
}

void E2bApi::handle(Connection& c, Request& r) {
  if (log::enabled(log::Level::debug)) log::debug("serve e2b: " + r.method + " " + r.target);
  if (is_envd(r.path)) return envd(c, r);
  try {
    rest(c, r);
  } catch (const RestError& e) {
    send_rest_error(c, e.status, e.message);
  } catch (const HttpError& e) {
    send_rest_error(c, e.status, e.message);
  } catch (const Error& e) {
    send_rest_error(c, e2b_status(e), e.what());
  } catch (const json::exception& e) {
    send_rest_error(c, 400, std::string("malformed JSON: ") + e.what());
  } catch (const std::exception& e) {
    send_rest_error(c, 500, e.what());
  }
}

void E2bApi::rest(Connection& c, Request& r) {
  static const std::regex kOne("^/sandboxes/([A-Za-z0-9_-]+)$");
  static const std::regex kOp("^/sandboxes/([A-Za-z0-9_-]+)/([a-z]+)$");
  std::smatch m;
  const std::string& p = r.path;
  const std::string& meth = r.method;
  if (p == "/sandboxes" && meth == "POST") return create_sandbox(c, r);
  if (p == "/sandboxes" && meth == "GET") return list_sandboxes(c, r);
  if (std::regex_match(p, m, kOne)) {
    if (meth == "GET") return get_sandbox(c, m[1]);
    if (meth == "DELETE") return delete_sandbox(c, m[1]);
  }
  if (std::regex_match(p, m, kOp) && meth == "POST") {
    if (m[2] == "timeout") return set_timeout(c, r, m[1], false);
    if (m[2] == "refreshes") return set_timeout(c, r, m[1], true);
    if (m[2] == "connect" || m[2] == "resume") return connect_sandbox(c, r, m[1]);
  }
  if (std::regex_match(p, m, kOp) && meth == "GET" && m[2] == "metrics") {
    auto sb = find(m[1]);
    if (!sb) throw RestError{404, "sandbox " + std::string(m[1]) + " not found"};
    auto st = engine_.stats(sb->sbx_id);
    json one = {{"timestamp", rfc3339(now_ms())},
                {"timestampUnix", now_ms() / 1000},
                {"cpuCount", sb->cpu_count},
                {"cpuUsedPct", 0.0},
                {"memUsed", st.memory_bytes},
                {"memTotal", st.memory_limit_bytes},
                {"diskUsed", 0},
                {"diskTotal", 0}};
    return (void)c.send(200, json::array({one}).dump());
  }
  throw RestError{501, "sbx serve's E2B endpoint does not implement " + meth + " " + r.target +
                           " (served: create, list, get, kill, timeout, refresh, connect, metrics; docs/e2b.md)"};
}

std::shared_ptr<E2bSandbox> E2bApi::find(const std::string& id) {
  std::lock_guard lk(mu_);
  auto it = sandboxes_.find(id);
  if (it == sandboxes_.end() || it->second->gone) return nullptr;
  return it->second;
}

json E2bApi::sandbox_json(const E2bSandbox& sb, bool detail) {
  json j = {{"sandboxID", sb.id},
            {"templateID", sb.template_id},
            {"alias", sb.template_id},
            {"clientID", "sbx"},
            {"startedAt", rfc3339(sb.started_ms)},
            {"endAt", rfc3339(sb.end_ms)},
            {"cpuCount", sb.cpu_count},
            {"memoryMB", sb.memory_mb},
            {"diskSizeMB", 0},
            {"metadata", sb.metadata},
            {"state", "running"},
            {"envdVersion", kEnvdVersion},
            {"volumeMounts", json::array()}};
  if (detail) j["envdAccessToken"] = sb.access_token;
  return j;
}

void E2bApi::create_sandbox(Connection& c, const Request& r) {
  json body = json::parse(r.body.empty() ? "{}" : r.body);
  std::string tmpl = body.value("templateID", "");
  if (tmpl.empty()) throw RestError{400, "templateID is required: the name of an sbx image"};
  int64_t timeout = timeout_ms(body, "timeout", kDefaultTimeoutS * 1000);
  if (body.contains("autoPause") && body["autoPause"].is_boolean() && body["autoPause"].get<bool>())
    throw RestError{400, "sbx serve does not pause sandboxes (lifecycle.onTimeout 'pause'); use 'kill'"};
  oci::ImageRecord img;
  try {
    img = engine_.resolve_or_pull(tmpl, oci::PullPolicy::Never, false, {});
  } catch (const Error& e) {
    throw RestError{404, "template '" + tmpl + "' is not an sbx image (sbx pull / sbx import it first): " + e.what()};
  }
  // E2B's create as the engine's options (engine/sandbox_options.h): it only
  // holds (envd's processes are execs), as `sbx create` without a command.
  engine::SandboxOptions o;
  o.names.command = "create";
  o.image = tmpl;
  o.hold_without_command = true;
  o.allow_host_idmap = false;
  if (auto ev = body.find("envVars"); ev != body.end() && ev->is_object())
    for (auto& [k, v] : ev->items()) o.env.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  json metadata = body.contains("metadata") && body["metadata"].is_object() ? body["metadata"] : json::object();
  o.labels = {{"sbx.e2b", "1"}, {"sbx.e2b.template", tmpl}};
  // Recording is asked for through metadata (docs/trajectory.md): its keys
  // become the labels the engine reads.
  for (const char* k : {engine::trajectory::kRecordLabel, engine::trajectory::kRedactLabel})
    if (auto m = metadata.find(k); m != metadata.end() && m->is_string()) o.labels[k] = m->get<std::string>();

  auto sb = std::make_shared<E2bSandbox>();
  sb->sbx_id = runtime::new_sandbox_id();
  sb->id = sb->sbx_id.substr(0, 20);
  sb->template_id = tmpl;
  sb->access_token = random_hex(40);
  sb->metadata = metadata;
  sb->cpu_count = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  o.id = sb->sbx_id;
  engine::SandboxRequest req;
  try {
    req = engine::build_sandbox(o, engine::resolved(engine_, img, tmpl), runtime_);
  } catch (const Error& e) {
    throw RestError{400, e.what()};
  }
  if (req.spec.resources.memory_bytes) sb->memory_mb = static_cast<int>(*req.spec.resources.memory_bytes >> 20);
  if (req.spec.resources.cpus) sb->cpu_count = std::max(1, static_cast<int>(*req.spec.resources.cpus + 0.5));
  try {
    engine::trajectory::create_labelled(engine_, req);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::InvalidArgument) throw RestError{400, e.what()};
    throw;
  }
  runtime::SandboxState created;
  try {
    created = engine_.inspect(sb->sbx_id).state;
  } catch (const Error&) {
  }
  sb->started_ms = now_ms();
  sb->end_ms = sb->started_ms + timeout;
  {
    std::lock_guard lk(mu_);
    sandboxes_[sb->id] = sb;
  }
  cv_.notify_all();
  on_sandbox_end(created, [this, sb, created] { watch(sb, created); });
  log::info("serve e2b: sandbox " + sb->id + " (" + tmpl + ") created, timeout " + std::to_string(timeout) + " s");
  json out = {{"sandboxID", sb->id},         {"templateID", tmpl},   {"alias", tmpl},
              {"clientID", "sbx"},           {"envdVersion", kEnvdVersion},
              {"envdAccessToken", sb->access_token}, {"domain", nullptr}};
  c.send(201, out.dump());
}

void E2bApi::list_sandboxes(Connection& c, const Request& r) {
  // ?metadata=k%3Dv%26k2%3Dv2 (url-encoded pairs), ?state=running,paused
  std::vector<std::pair<std::string, std::string>> want;
  std::string md = r.param("metadata");
  for (size_t i = 0; i < md.size();) {
    size_t amp = md.find('&', i);
    if (amp == std::string::npos) amp = md.size();
    std::string kv = md.substr(i, amp - i);
    auto eq = kv.find('=');
    if (!kv.empty()) want.emplace_back(url_decode(kv.substr(0, eq)), eq == std::string::npos ? "" : url_decode(kv.substr(eq + 1)));
    i = amp + 1;
  }
  std::string state = r.param("state");
  bool running = state.empty() || state.find("running") != std::string::npos;
  json out = json::array();
  {
    std::lock_guard lk(mu_);
    for (const auto& [id, sb] : sandboxes_) {
      if (sb->gone || !running) continue;
      bool ok = true;
      for (const auto& [k, v] : want) ok = ok && sb->metadata.contains(k) && sb->metadata[k] == v;
      if (ok) out.push_back(sandbox_json(*sb, false));
    }
  }
  c.send(200, out.dump());  // (not under mu_: a client that does not read must not hold up the others)
}

void E2bApi::get_sandbox(Connection& c, const std::string& id) {
  auto sb = find(id);
  if (!sb) throw RestError{404, "sandbox " + id + " not found"};
  json out;
  {
    std::lock_guard lk(mu_);
    out = sandbox_json(*sb, true);
  }
  c.send(200, out.dump());
}

void E2bApi::delete_sandbox(Connection& c, const std::string& id) {
  auto sb = find(id);
  if (!sb) throw RestError{404, "sandbox " + id + " not found"};
  kill_sandbox(sb);
  c.send(204, "");
}

void E2bApi::set_timeout(Connection& c, const Request& r, const std::string& id, bool refresh) {
  json body = json::parse(r.body.empty() ? "{}" : r.body);
  auto sb = find(id);
  if (!sb) throw RestError{404, "sandbox " + id + " not found"};
  int64_t t = timeout_ms(body, refresh ? "duration" : "timeout", refresh ? 0 : -1);
  if (t < 0) throw RestError{400, "'timeout' (seconds) is required"};
  {
    std::lock_guard lk(mu_);
    int64_t end = now_ms() + t;
    // setTimeout sets the deadline (shorter or longer); a refresh only extends it.
    if (!refresh || end > sb->end_ms) sb->end_ms = end;
  }
  cv_.notify_all();
  c.send(204, "");
}

void E2bApi::connect_sandbox(Connection& c, const Request& r, const std::string& id) {
  json body = json::parse(r.body.empty() ? "{}" : r.body);
  auto sb = find(id);
  if (!sb) throw RestError{404, "sandbox " + id + " not found (sbx serve has no paused sandboxes)"};
  int64_t t = timeout_ms(body, "timeout", 0);
  json out;
  {
    std::lock_guard lk(mu_);
    if (t > 0) sb->end_ms = std::max(sb->end_ms, now_ms() + t);
    out = sandbox_json(*sb, true);
  }
  cv_.notify_all();
  c.send(200, out.dump());
}

void E2bApi::kill_sandbox(const std::shared_ptr<E2bSandbox>& sb) {
  {
    std::lock_guard lk(mu_);
    if (sb->gone) return;
    sb->gone = true;
    for (auto& [pid, p] : sb->procs)
      if (!p->ended && p->cancel_w >= 0) (void)!::write(p->cancel_w, "x", 1);
  }
  cv_.notify_all();
  try {
    engine_.remove(sb->sbx_id, engine::RemoveRequest{true, true});  // anonymous volumes too
  } catch (const Error& e) {
    log::warn("serve e2b: remove sandbox " + sb->id + ": " + e.what());
  }
  std::lock_guard lk(mu_);
  sandboxes_.erase(sb->id);
}

void E2bApi::watch(std::shared_ptr<E2bSandbox> sb, runtime::SandboxState created) {
  wait_and_reap(engine_, sb->sbx_id, created, "e2b");
  bool ours;
  {
    std::lock_guard lk(mu_);
    ours = !sb->gone;  // it ended on its own, not through kill_sandbox
  }
  if (ours) kill_sandbox(sb);  // removes what is left and forgets it
}

void E2bApi::reap_loop() {
  std::unique_lock lk(mu_);
  while (!stopping_) {
    int64_t now = now_ms(), next = now + 60000;
    std::vector<std::shared_ptr<E2bSandbox>> due;
    for (auto& [id, sb] : sandboxes_) {
      if (sb->gone) continue;
      if (sb->end_ms <= now) due.push_back(sb);
      else next = std::min(next, sb->end_ms);
    }
    if (!due.empty()) {
      lk.unlock();
      for (auto& sb : due) {
        log::info("serve e2b: sandbox " + sb->id + " reached its timeout: killed");
        kill_sandbox(sb);
      }
      lk.lock();
      continue;
    }
    cv_.wait_for(lk, std::chrono::milliseconds(std::max<int64_t>(next - now, 10)));
  }
}

std::string E2bApi::request_user(const Request& r) {
  std::string a = r.header("authorization");
  if (a.rfind("Basic ", 0) != 0) return "";
  std::string dec;
  try {
    dec = base64_decode(a.substr(6));
  } catch (const ConnectError&) {
    return "";
  }
  return dec.substr(0, dec.find(':'));
}

void E2bApi::envd(Connection& c, Request& r) {
  const std::string& p = r.path;
  bool rpc = is_rpc(p);
  auto fail = [&](int status, const std::string& code, const std::string& msg) {
    if (rpc) return (void)c.send(connect_http_status(code), json{{"code", code}, {"message", msg}}.dump());
    c.send(status, json{{"code", status}, {"message", msg}}.dump());
  };
  std::string sid = r.header("e2b-sandbox-id");
  std::shared_ptr<E2bSandbox> sb;
  {
    std::lock_guard lk(mu_);
    auto it = sandboxes_.find(sid);
    if (it != sandboxes_.end()) sb = it->second;
  }
  // 502: what E2B's proxy answers for a sandbox that is gone (the SDK's
  // isRunning() reads it as "not running").
  if (!sb || sb->gone) return fail(502, "unavailable", "sandbox '" + sid + "' is not running (E2b-Sandbox-Id)");
  if (!same_secret(r.header("x-access-token"), sb->access_token))
    return fail(401, "unauthenticated", "missing or wrong X-Access-Token for sandbox " + sid);
  try {
    if (p == "/health" && r.method == "GET") return (void)c.send(204, "");
    if (p == "/files" && r.method == "GET") return files_get(c, r, sb);
    if (p == "/files" && r.method == "POST") return files_post(c, r, sb);
    if (!rpc) return fail(405, "", r.method + " " + p + " is not served");
    if (r.method != "POST") return fail(405, "unimplemented", "Connect calls are POSTs");
    std::string method = p.substr(p.find('/', 1) + 1);
    if (p == "/process.Process/Start") return process_start(c, r, sb);
    if (p == "/process.Process/Connect") return process_connect(c, r, sb);
    json in = json::parse(r.body.empty() ? "{}" : r.body);
    json out;
    if (p.rfind("/process.Process/", 0) == 0) out = process_unary(method, in, sb);
    else out = filesystem_unary(method, in, r, sb);
    c.send(200, out.dump());
  } catch (const ConnectError& e) {
    fail(connect_http_status(e.code), e.code, e.message);
  } catch (const HttpError& e) {
    fail(e.status, e.status == 404 ? "not_found" : "invalid_argument", e.message);
  } catch (const Error& e) {
    const char* code = connect_code(e);
    fail(connect_http_status(code), code, e.what());
  } catch (const json::exception& e) {
    fail(400, "invalid_argument", std::string("malformed JSON: ") + e.what());
  } catch (const std::exception& e) {
    fail(500, "internal", e.what());
  }
}

}  // namespace sbx::server
