#include "gpusizer/check/osmo/renderer.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include <yaml-cpp/yaml.h>

#include "gpusizer/check/osmo/evaluator.h"
#include "gpusizer/check/osmo/scanner.h"
#include "gpusizer/check/osmo/template.h"
#include "gpusizer/util/strings.h"

namespace gpusizer::osmo {

namespace {

// What an expression check cannot evaluate renders as in the text OSMO
// would parse.
constexpr std::string_view kUnevaluated = "gpu-sizer-unevaluated-expression";

const char* const kSpecialTokenHint =
    " (OSMO keeps {{output}}, {{input:N}}, {{uuid}}, {{workflow_id}} and {{host:x}} only when written "
    "without spaces)";

std::string marker(std::size_t index) {
  return std::string(kMarkerHead) + std::to_string(index) + std::string(kMarkerTail);
}

}  // namespace

std::optional<std::string> section_key(std::string_view line) {
  if (line.empty() || !std::isalpha(static_cast<unsigned char>(line[0]))) return std::nullopt;
  std::size_t i = 1;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == '-')) {
    ++i;
  }
  if (i < line.size() && line[i] == ':') return std::string(line.substr(0, i));
  return std::nullopt;
}

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
                                     const std::map<std::string, std::string>& set_values, const YamlBounds& bounds) {
  Variables variables;
  if (defaults) {
    YAML::Node root;
    // from_yaml writes an alias out as what it repeats: counted first.
    YamlBudget budget{bounds};
    try {
      root = load_yaml(padded_section(lines, *defaults), budget);
    } catch (const YAML::ParserException& e) {
      return Status::failure(ProblemCode::kSyntax, "default-values",
                             at_line(e.mark.line + 1) + "YAML error in default-values: " + e.msg);
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
      return Status::failure(ProblemCode::kWrongType, "default-values",
                             at_line(static_cast<int>(defaults->first_line) + 1) +
                                 "default-values must be a mapping of variable names to values");
    }
  }
  for (const auto& [name, raw] : set_values) variables[name] = Variable{typed_set_value(raw), raw};
  return variables;
}

namespace {

// Nested loops multiply: a few lines over short lists could render more
// than memory holds. No real spec comes near this.
constexpr std::size_t kMaxRenderedBytes = std::size_t{64} << 20;

struct TooLarge {
  int line;  // of the loop that passed the limit
};

// Walks the template tree, writing the rendering and noting, per block
// whose condition it cannot evaluate, the alternatives it could take.
class TreeRenderer {
 public:
  TreeRenderer(Rendered& out, const BlockChoices& choices, const ForcedBranches& forced)
      : out_(out), choices_(choices), forced_(forced) {
    out_.file_line.push_back(1);
  }

  void nodes(const std::vector<TemplateNode>& list, const Variables& variables) {
    for (const TemplateNode& node : list) {
      switch (node.kind) {
        case TemplateNode::Kind::kPiece: piece(node.piece, variables); break;
        case TemplateNode::Kind::kIf: conditional(node, variables); break;
        case TemplateNode::Kind::kFor: loop(node, variables); break;
      }
    }
  }

 private:
  // Rendered text, noting the file line each rendered line comes from.
  void emit(std::string_view s) {
    for (char c : s) {
      out_.text += c;
      if (c == '\n') out_.file_line.push_back(line_);
    }
  }

  void piece(const TemplatePiece& piece, const Variables& variables) {
    line_ = piece.line;  // a loop reads its body again, a skipped branch jumps
    switch (piece.kind) {
      case TemplatePiece::Kind::kText:
        for (char c : piece.text) {
          if (c == '\n') ++line_;
          emit(std::string_view(&c, 1));
        }
        out_.marked += piece.text;
        break;
      case TemplatePiece::Kind::kComment:
      case TemplatePiece::Kind::kStatement:
        for (char c : piece.text) {
          if (c != '\n') continue;
          ++line_;
          out_.marked += '\n';
          emit("\n");
        }
        break;
      case TemplatePiece::Kind::kKept:
        emit(piece.text);
        out_.marked += piece.text;
        break;
      case TemplatePiece::Kind::kExpression: {
        Substitution sub{std::string(piece.text), piece.line};
        const EvaluatedText result = evaluate_text(piece.inner, variables);
        sub.plain_variable = result.plain_variable;
        switch (result.evaluated.outcome) {
          case Evaluated::Outcome::kValue: sub.evaluated = true; break;
          case Evaluated::Outcome::kUndefined:
            sub.undefined = result.evaluated.detail;
            sub.problem = "variable " + sub.undefined + " has no value";
            out_.missing.push_back({sub.undefined, piece.line});
            break;
          case Evaluated::Outcome::kUnevaluable: sub.problem = result.evaluated.detail; break;
        }
        emit(sub.evaluated ? py_str(result.evaluated.value) : std::string(kUnevaluated));
        out_.marked += marker(out_.subs.size());
        out_.subs.push_back(std::move(sub));
        for (char c : piece.text) line_ += c == '\n';
        break;
      }
    }
  }

  // Notes a block check cannot decide with the reason, and returns the
  // alternative to render (0 unless the caller chose another).
  std::size_t undecided(const TemplateNode& node, const TemplateBranch& branch, const Evaluated& evaluated,
                        std::size_t alternatives) {
    const bool seen =
        std::any_of(out_.undecided.begin(), out_.undecided.end(), [&](const Undecided& u) { return u.id == node.id; });
    if (!seen) {
      const bool undefined = evaluated.outcome == Evaluated::Outcome::kUndefined;
      out_.undecided.push_back({node.id, branch.line, branch.tag, undefined ? evaluated.detail : "",
                                undefined ? "variable " + evaluated.detail + " has no value" : evaluated.detail,
                                alternatives});
    }
    auto chosen = choices_.find(node.id);
    return chosen == choices_.end() ? 0 : std::min(chosen->second, alternatives - 1);
  }

  // Notes the branches left out when branch `taken` (branches.size() for
  // none) renders: those before it left out by their own false condition,
  // those after it by the tag of the branch taken.
  void skip_others(const TemplateNode& node, std::size_t taken) {
    const std::vector<TemplateBranch>& branches = node.branches;
    for (std::size_t b = 0; b < branches.size(); ++b) {
      const bool seen = std::any_of(out_.skipped.begin(), out_.skipped.end(),
                                    [&](const Skipped& s) { return s.id == node.id && s.branch == b; });
      if (b == taken || seen) continue;  // a loop renders a block again
      const TemplateBranch& cause = b < taken ? branches[b] : branches[taken];
      out_.skipped.push_back({node.id, b, cause.line, cause.tag});
    }
  }

  void conditional(const TemplateNode& node, const Variables& variables) {
    const std::vector<TemplateBranch>& branches = node.branches;
    if (auto forced = forced_.find(node.id); forced != forced_.end()) {
      if (forced->second < branches.size()) nodes(branches[forced->second].body, variables);
      return;
    }
    for (std::size_t b = 0; b < branches.size(); ++b) {
      const TemplateBranch& branch = branches[b];
      if (branch.is_else) {
        skip_others(node, b);
        return nodes(branch.body, variables);
      }
      const EvaluatedText result = evaluate_text(branch.condition, variables);
      if (result.evaluated.outcome == Evaluated::Outcome::kValue) {
        if (truthy(result.evaluated.value)) {
          skip_others(node, b);
          return nodes(branch.body, variables);
        }
        continue;
      }
      // This branch and every later one could be the one rendered, or none
      // when there is no else.
      const bool has_else = branches.back().is_else;
      const std::size_t alternatives = branches.size() - b + (has_else ? 0 : 1);
      const std::size_t taken = b + undecided(node, branch, result.evaluated, alternatives);
      if (taken < branches.size()) nodes(branches[taken].body, variables);
      return;
    }
    skip_others(node, branches.size());
  }

  void loop(const TemplateNode& node, const Variables& variables) {
    const TemplateBranch& body = node.branches.front();
    const EvaluatedText result = evaluate_text(body.condition, variables);
    Evaluated evaluated = result.evaluated;
    std::vector<Value> items;
    if (evaluated.outcome == Evaluated::Outcome::kValue) {
      const Value& v = evaluated.value;
      if (v.type == Value::Type::kList) {
        items = v.items;
      } else if (v.type == Value::Type::kDict) {
        items = v.keys;
      } else if (v.type == Value::Type::kStr) {
        for (char c : v.s) items.push_back(Value::str(std::string(1, c)));
      } else {
        evaluated = {Evaluated::Outcome::kUnevaluable, Value(), "a loop over " + describe(v)};
      }
    }
    Variables scope = variables;
    if (evaluated.outcome != Evaluated::Outcome::kValue) {
      // Unknown items: render the body not at all, or once with the loop
      // variable unknown.
      if (undecided(node, body, evaluated, 2) == 1) {
        scope.erase(node.loop_variable);
        nodes(body.body, scope);
      }
      return;
    }
    for (const Value& item : items) {
      scope[node.loop_variable] = Variable{item, py_str(item)};
      nodes(body.body, scope);
      if (out_.text.size() > kMaxRenderedBytes) throw TooLarge{body.line};
    }
  }

  Rendered& out_;
  const BlockChoices& choices_;
  const ForcedBranches& forced_;
  int line_ = 1;  // of the text being read
};

}  // namespace

Result<Rendered> render(std::string_view text, const Variables& variables, const BlockChoices& choices,
                        const ForcedBranches& forced) {
  auto pieces = scan_template(text);
  if (!pieces) return pieces.status();
  auto tree = parse_template(pieces.value());
  if (!tree) return tree.status();
  Rendered out;
  try {
    TreeRenderer(out, choices, forced).nodes(tree.value(), variables);
  } catch (const TooLarge& large) {
    return Status::failure(ProblemCode::kTooLarge, "",
                           at_line(large.line) + "the loop renders the spec past " +
                               std::to_string(kMaxRenderedBytes >> 20) + " MiB; check stops there");
  }
  return out;
}

std::string missing_variables_message(const std::vector<MissingVariable>& missing, bool sizing_reads_them) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  bool special = false;
  for (const MissingVariable& m : missing) {
    if (!seen.insert(m.name).second) continue;
    names.push_back(m.name + " (line " + std::to_string(m.line) + ")");
    special = special || m.name == "output" || m.name == "uuid" || m.name == "workflow_id";
  }
  if (names.empty()) return "";
  const std::string fix = "--set " + missing.front().name + "=VALUE";
  const std::string subject = std::string(names.size() == 1 ? "variable " : "variables ") + join(names, ", ") +
                              (names.size() == 1 ? " has" : " have") + " no value";
  const std::string hint = special ? kSpecialTokenHint : "";
  if (!sizing_reads_them) {
    return subject + ": sizing does not read " + (names.size() == 1 ? "it" : "them") +
           ", so check went on, but OSMO fails the submit without " + (names.size() == 1 ? "it" : "them") +
           " (add to default-values or pass " + fix + "; --strict makes this an error)" + hint;
  }
  return subject + ", and OSMO fails the submit: add it to default-values or pass " + fix + hint;
}

}  // namespace gpusizer::osmo
