#include "gpusizer/check/osmo/renderer.h"

#include <cctype>
#include <optional>
#include <set>

#include <yaml-cpp/yaml.h>

#include "gpusizer/check/osmo/evaluator.h"
#include "gpusizer/check/osmo/scanner.h"
#include "gpusizer/util/strings.h"

namespace gpusizer::osmo {

namespace {

// What an expression check cannot evaluate renders as in the text OSMO
// would parse.
constexpr std::string_view kUnevaluated = "gpu-sizer-unevaluated-expression";

const char* const kSpecialTokenHint =
    " (OSMO keeps {{output}}, {{input:N}}, {{uuid}}, {{workflow_id}} and {{host:x}} only when written "
    "without spaces)";

std::optional<std::string> section_key(std::string_view line) {
  if (line.empty() || !std::isalpha(static_cast<unsigned char>(line[0]))) return std::nullopt;
  std::size_t i = 1;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == '-')) {
    ++i;
  }
  if (i < line.size() && line[i] == ':') return std::string(line.substr(0, i));
  return std::nullopt;
}

std::string marker(std::size_t index) {
  return std::string(kMarkerHead) + std::to_string(index) + std::string(kMarkerTail);
}

}  // namespace

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::vector<Section> find_sections(const std::vector<std::string_view>& lines) {
  std::vector<Section> sections;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (auto key = section_key(lines[i])) {
      if (!sections.empty()) sections.back().end_line = i;
      sections.push_back(Section{*key, i, lines.size()});
    }
  }
  return sections;
}

std::string padded_section(const std::vector<std::string_view>& lines, const Section& section) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += '\n';
    if (i >= section.first_line && i < section.end_line) out += lines[i];
  }
  return out;
}

Result<Variables> template_variables(const std::vector<std::string_view>& lines, const Section* defaults,
                                     const std::map<std::string, std::string>& set_values) {
  Variables variables;
  if (defaults) {
    YAML::Node root;
    try {
      root = YAML::Load(padded_section(lines, *defaults));
    } catch (const YAML::ParserException& e) {
      return Status::invalid_argument(at_line(e.mark.line + 1) + "YAML error in default-values: " + e.msg);
    }
    const YAML::Node values = root["default-values"];
    if (values.IsMap()) {
      for (const auto& entry : values) {
        if (!entry.first.IsScalar()) continue;
        Value value = from_yaml(entry.second);
        std::string shown = py_str(value);
        variables[entry.first.Scalar()] = Variable{std::move(value), std::move(shown)};
      }
    } else if (!values.IsNull()) {
      return Status::invalid_argument(at_line(static_cast<int>(defaults->first_line) + 1) +
                                      "default-values must be a mapping of variable names to values");
    }
  }
  for (const auto& [name, raw] : set_values) variables[name] = Variable{typed_set_value(raw), raw};
  return variables;
}

Result<Rendered> render(std::string_view text, const Variables& variables) {
  auto pieces = scan_template(text);
  if (!pieces) return pieces.status();
  Rendered out;
  out.file_line.push_back(1);
  int line = 1;  // of the text being read
  // Rendered text, noting the file line each rendered line comes from.
  auto emit = [&](std::string_view s) {
    for (char c : s) {
      out.text += c;
      if (c == '\n') out.file_line.push_back(line);
    }
  };
  struct Missing {
    std::string name;
    int line;
  };
  std::vector<Missing> missing;
  for (const TemplatePiece& piece : pieces.value()) {
    switch (piece.kind) {
      case TemplatePiece::Kind::kText:
        for (char c : piece.text) {
          if (c == '\n') ++line;
          emit(std::string_view(&c, 1));
        }
        out.marked += piece.text;
        break;
      case TemplatePiece::Kind::kComment:
        for (char c : piece.text) {
          if (c != '\n') continue;
          ++line;
          out.marked += '\n';
          emit("\n");
        }
        break;
      case TemplatePiece::Kind::kKept:
        emit(piece.text);
        out.marked += piece.text;
        break;
      case TemplatePiece::Kind::kExpression: {
        Substitution sub{std::string(piece.text), piece.line};
        const EvaluatedText result = evaluate_text(piece.inner, variables);
        sub.plain_variable = result.plain_variable;
        switch (result.evaluated.outcome) {
          case Evaluated::Outcome::kValue: sub.evaluated = true; break;
          case Evaluated::Outcome::kUndefined: missing.push_back({result.evaluated.detail, piece.line}); break;
          case Evaluated::Outcome::kUnevaluable: sub.problem = result.evaluated.detail; break;
        }
        emit(sub.evaluated ? py_str(result.evaluated.value) : std::string(kUnevaluated));
        out.marked += marker(out.subs.size());
        out.subs.push_back(std::move(sub));
        for (char c : piece.text) line += c == '\n';
        break;
      }
    }
  }
  if (!missing.empty()) {
    std::vector<std::string> names;
    std::set<std::string> seen;
    bool special = false;
    for (const Missing& m : missing) {
      if (!seen.insert(m.name).second) continue;
      names.push_back(m.name + " (line " + std::to_string(m.line) + ")");
      special = special || m.name == "output" || m.name == "uuid" || m.name == "workflow_id";
    }
    const std::string& first = missing.front().name;
    return Status::invalid_argument(std::string(names.size() == 1 ? "variable " : "variables ") + join(names, ", ") +
                                    (names.size() == 1 ? " has" : " have") +
                                    " no value, and OSMO fails the submit: add it to default-values or pass --set " +
                                    first + "=VALUE" + (special ? kSpecialTokenHint : ""));
  }
  return out;
}

}  // namespace gpusizer::osmo
