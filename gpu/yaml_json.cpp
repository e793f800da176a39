#include "gpu/yaml_json.h"

#include <yaml.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace sbx::gpu {

namespace {

constexpr int kMaxDepth = 64;
// Bounds alias expansion ("billion laughs"): CDI specs have a few thousand nodes.
constexpr long kMaxNodes = 1000000;

nlohmann::json scalar(const yaml_node_t* n) {
  std::string v(reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length);
  if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return v;
  if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL") return nullptr;
  if (v == "true" || v == "True" || v == "TRUE") return true;
  if (v == "false" || v == "False" || v == "FALSE") return false;
  // Integers: decimal, 0x hex, 0o octal (YAML 1.2) and 0-prefixed octal (1.1).
  {
    std::string s = v;
    bool neg = false;
    if (s[0] == '-' || s[0] == '+') {
      neg = s[0] == '-';
      s = s.substr(1);
    }
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      base = 16;
      s = s.substr(2);
    } else if (s.size() > 2 && s[0] == '0' && s[1] == 'o') {
      base = 8;
      s = s.substr(2);
    } else if (s.size() > 1 && s[0] == '0') {
      base = 8;
      s = s.substr(1);
    }
    if (!s.empty()) {
      errno = 0;
      char* end = nullptr;
      long long x = std::strtoll(s.c_str(), &end, base);
      if (end && *end == '\0' && errno == 0 && std::isalnum(static_cast<unsigned char>(s[0]))) return neg ? -x : x;
    }
  }
  {
    char* end = nullptr;
    errno = 0;
    double d = std::strtod(v.c_str(), &end);
    if (end && *end == '\0' && errno == 0 && v.find_first_of("0123456789") != std::string::npos &&
        v.find_first_not_of("0123456789+-.eE") == std::string::npos)
      return d;
  }
  return v;
}

nlohmann::json convert(yaml_document_t* doc, yaml_node_t* n, int depth, long& budget, const std::string& what) {
  if (!n) return nullptr;
  if (--budget < 0) throw Error(what + ": YAML expands to more than " + std::to_string(kMaxNodes) + " nodes (alias bomb?)");
  if (depth > kMaxDepth) throw Error(what + ": YAML nested deeper than " + std::to_string(kMaxDepth) + " levels");
  switch (n->type) {
    case YAML_SCALAR_NODE:
      return scalar(n);
    case YAML_SEQUENCE_NODE: {
      nlohmann::json a = nlohmann::json::array();
      for (yaml_node_item_t* i = n->data.sequence.items.start; i < n->data.sequence.items.top; ++i)
        a.push_back(convert(doc, yaml_document_get_node(doc, *i), depth + 1, budget, what));
      return a;
    }
    case YAML_MAPPING_NODE: {
      nlohmann::json o = nlohmann::json::object();
      for (yaml_node_pair_t* p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; ++p) {
        yaml_node_t* k = yaml_document_get_node(doc, p->key);
        if (!k || k->type != YAML_SCALAR_NODE) throw Error(ErrorKind::InvalidArgument,
                    what + ": YAML mapping keys must be plain strings");
        std::string key(reinterpret_cast<const char*>(k->data.scalar.value), k->data.scalar.length);
        o[key] = convert(doc, yaml_document_get_node(doc, p->value), depth + 1, budget, what);
      }
      return o;
    }
    default:
      return nullptr;
  }
}

}  // namespace

nlohmann::json yaml_to_json(std::string_view text, const std::string& what) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) throw Error(what + ": cannot initialise the YAML parser (out of memory)");
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> pg(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  yaml_document_t doc;
  if (!yaml_parser_load(&parser, &doc)) {
    std::string msg = what + ": invalid YAML";
    if (parser.problem) msg += ": " + std::string(parser.problem);
    msg += " at line " + std::to_string(parser.problem_mark.line + 1) + ", column " +
           std::to_string(parser.problem_mark.column + 1);
    if (parser.context) msg += " (" + std::string(parser.context) + ")";
    throw Error(msg);
  }
  std::unique_ptr<yaml_document_t, void (*)(yaml_document_t*)> dg(&doc, yaml_document_delete);
  long budget = kMaxNodes;
  return convert(&doc, yaml_document_get_root_node(&doc), 0, budget, what);
}

}  // namespace sbx::gpu
