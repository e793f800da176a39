#include "common/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace sbx::units {

uint64_t parse_size(const std::string& text, const std::string& what) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) throw Error(ErrorKind::InvalidArgument,
              "invalid " + what + " '" + text + "': expected a number with an optional unit (b, k, m, g)");
  double value = std::stod(text.substr(0, i));
  std::string unit = text.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double mult = 1;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") mult = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb" || unit == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else throw Error(ErrorKind::InvalidArgument,
              "invalid " + what + " '" + text + "': unknown unit '" + unit + "' (use b, k, m, g or t)");
  return static_cast<uint64_t>(std::llround(value * mult));
}

std::chrono::milliseconds parse_duration(const std::string& text, const std::string& what) {
  if (text.empty()) throw Error(ErrorKind::InvalidArgument, "invalid " + what + ": empty");
  double total_ms = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
    if (j == i) throw Error(ErrorKind::InvalidArgument,
                "invalid " + what + " '" + text + "': expected e.g. 10s, 500ms, 1m30s");
    double v = std::stod(text.substr(i, j - i));
    size_t k = j;
    while (k < text.size() && std::isalpha(static_cast<unsigned char>(text[k]))) ++k;
    std::string unit = text.substr(j, k - j);
    if (unit.empty() || unit == "s") total_ms += v * 1000;
    else if (unit == "ms") total_ms += v;
    else if (unit == "m") total_ms += v * 60000;
    else if (unit == "h") total_ms += v * 3600000;
    else throw Error(ErrorKind::InvalidArgument,
                "invalid " + what + " '" + text + "': unknown unit '" + unit + "' (use ms, s, m or h)");
    any = true;
    i = k;
  }
  if (!any) throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "'");
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

std::string format_size(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string format_size_si(uint64_t bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : (v < 10 ? "%.2f %s" : (v < 100 ? "%.1f %s" : "%.0f %s")), v,
                units[u]);
  return buf;
}

}  // namespace sbx::units
