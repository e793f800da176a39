// GET /containers/{id}/logs and the output side of attach: the first
// process's log (runtime/sandbox_log.h records) as Docker serves it — the
// 8-byte multiplexed framing with stream 1 (stdout) and 2 (stderr) without a
// tty, raw bytes with one; `timestamps` puts each line's RFC 3339 time (9
// fraction digits) and a space before it; `since`/`until` (unix seconds or
// RFC 3339) bound the times; `tail` keeps the last N lines.
#include <string>
#include <vector>

#include "common/error.h"
#include "server/docker/api.h"

namespace sbx::server {

namespace {

/// One piece of a line (a record, or a line of an old raw log).
struct Piece {
  int stream;
  int64_t time_ns;
  bool partial;  ///< no newline at its end
  std::string text;
};

/// Calls f(stream, time, partial, text) for each line piece of `r`: a record
/// as it is; a raw log's chunk (time 0) cut at its newlines.
template <class F>
void pieces(const runtime::LogRecord& r, F&& f) {
  if (r.time_ns != 0) return f(r.stream, r.time_ns, r.partial, r.text);
  std::string_view t = r.text;
  while (!t.empty()) {
    size_t nl = t.find('\n');
    if (nl == std::string_view::npos) return f(r.stream, r.time_ns, true, t);
    f(r.stream, r.time_ns, false, t.substr(0, nl + 1));
    t.remove_prefix(nl + 1);
  }
}

int64_t time_param(const Request& r, const std::string& k) {
  std::string v = r.param(k);
  if (v.empty() || v == "0") return 0;
  int64_t ns;
  if (!runtime::parse_time_ns(v, ns)) throw HttpError{400, "invalid value for \"" + k + "\": " + v};
  return ns;
}

}  // namespace

void Api::stream_log(const std::string& id, const LogOptions& o, bool follow,
                     const std::function<bool(int, std::string_view)>& emit) {
  bool line_start[3] = {true, true, true};
  auto out = [&](int stream, int64_t t, bool partial, std::string_view text) {
    if ((stream == runtime::kStdout && !o.out) || (stream == runtime::kStderr && !o.err)) return;
    if ((o.since_ns && t < o.since_ns) || (o.until_ns && t > o.until_ns)) return;
    std::string data;
    if (o.timestamps && line_start[stream]) {
      char ts[32];
      data.append(ts, runtime::format_rfc3339_ns(t, ts)).push_back(' ');
    }
    line_start[stream] = !partial;
    data.append(text);
    if (!emit(stream, data)) throw ClientGone{};
  };
  {
    if (o.tail < 0) {
      engine_.log_records(id, follow, [&](const runtime::LogRecord& r) { pieces(r, out); });
      return;
    }
    // The last `tail` lines of what is there now; then (follow) what comes
    // after it: the pieces past those already counted.
    std::vector<Piece> all;
    engine_.log_records(id, false, [&](const runtime::LogRecord& r) {
      pieces(r, [&](int s, int64_t t, bool p, std::string_view x) { all.push_back({s, t, p, std::string(x)}); });
    });
    const size_t seen = all.size();
    size_t start = all.size(), lines = 0;
    if (o.tail > 0) {
      for (size_t j = all.size(); j-- > 0;) {
        if (j == 0 || !all[j - 1].partial) ++lines;  // a line starts at j
        start = j;
        if (lines == static_cast<size_t>(o.tail)) break;
      }
    }
    for (size_t j = start; j < all.size(); ++j) out(all[j].stream, all[j].time_ns, all[j].partial, all[j].text);
    if (!follow) return;
    size_t n = 0;
    engine_.log_records(id, true, [&](const runtime::LogRecord& r) {
      pieces(r, [&](int s, int64_t t, bool p, std::string_view x) {
        if (n++ >= seen) out(s, t, p, x);
      });
    });
  }
}

void Api::container_logs(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  LogOptions o;
  o.out = r.flag("stdout");
  o.err = r.flag("stderr");
  if (!o.out && !o.err) throw HttpError{400, "You must choose at least one stream"};
  o.timestamps = r.flag("timestamps");
  o.since_ns = time_param(r, "since");
  o.until_ns = time_param(r, "until");
  std::string tail = r.param("tail");
  if (!tail.empty() && tail != "all") {
    try {
      o.tail = std::stol(tail);
    } catch (const std::exception&) {
      throw HttpError{400, "invalid value for \"tail\": " + tail};
    }
    if (o.tail < 0) o.tail = -1;
  }
  auto ctr = record(id);
  bool tty = ctr && ctr->tty();
  const char* ctype = tty ? kRaw : kMux;
  if (ctr && !ctr->started) return (void)c.send(200, "", ctype);
  auto wrap = [&](int stream, std::string_view d) { return tty ? std::string(d) : docker_frame(stream, d); };
  if (!r.flag("follow")) {
    std::string body;
    stream_log(id, o, false, [&](int s, std::string_view d) {
      body += wrap(s, d);
      return true;
    });
    return (void)c.send(200, body, ctype);
  }
  if (!c.begin_chunks(200, ctype)) return;
  try {
    stream_log(id, o, true, [&](int s, std::string_view d) { return c.chunk(wrap(s, d)); });
  } catch (const ClientGone&) {
    c.set_close();
    return;
  }
  c.end_chunks();
}

}  // namespace sbx::server
