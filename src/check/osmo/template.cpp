#include "gpusizer/check/osmo/template.h"

#include <cctype>
#include <utility>

#include "gpusizer/check/osmo/scanner.h"
#include "gpusizer/check/osmo/spec.h"
#include "gpusizer/util/strings.h"

namespace gpusizer::osmo {

namespace {

// The statement's first word and the rest, trimmed.
std::pair<std::string, std::string> split_statement(std::string_view inner) {
  const std::string_view text = trim(inner);
  std::size_t end = 0;
  while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
  return {std::string(text.substr(0, end)), std::string(trim(text.substr(end)))};
}

bool is_name(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// Reads the pieces into nested blocks; SpecError leaves it.
class TreeBuilder {
 public:
  std::vector<TemplateNode> build(const std::vector<TemplatePiece>& pieces) {
    for (const TemplatePiece& piece : pieces) {
      if (piece.kind == TemplatePiece::Kind::kStatement) {
        statement(piece);
      } else {
        TemplateNode node;
        node.piece = piece;
        body().push_back(std::move(node));
      }
    }
    if (!open_.empty()) {
      const TemplateBranch& first = open_.back().branches.front();
      const bool is_if = open_.back().kind == TemplateNode::Kind::kIf;
      throw SpecError{at_line(first.line) + "`" + first.tag + "` is never closed with " +
                      (is_if ? "{% endif %}" : "{% endfor %}") + "; OSMO fails to render this spec too"};
    }
    return std::move(top_);
  }

 private:
  std::vector<TemplateNode>& body() { return open_.empty() ? top_ : open_.back().branches.back().body; }

  void statement(const TemplatePiece& piece) {
    const std::string tag(piece.text);
    const auto [word, rest] = split_statement(piece.inner);
    TemplateBranch branch{tag, rest, false, piece.line, {}};
    if (word == "if" || word == "for") {
      TemplateNode block;
      block.kind = word == "if" ? TemplateNode::Kind::kIf : TemplateNode::Kind::kFor;
      block.id = next_id_++;
      if (word == "for") read_loop(block, branch);
      if (branch.condition.empty()) fail(piece, "needs an expression after " + word);
      block.branches.push_back(std::move(branch));
      open_.push_back(std::move(block));
    } else if (word == "elif" || word == "else") {
      if (open_.empty() || open_.back().kind != TemplateNode::Kind::kIf || open_.back().branches.back().is_else) {
        fail(piece, "matches no open {% if %}");
      }
      branch.is_else = word == "else";
      if (branch.is_else != branch.condition.empty()) {
        fail(piece, branch.is_else ? "takes no condition" : "needs a condition");
      }
      open_.back().branches.push_back(std::move(branch));
    } else if (word == "endif" || word == "endfor") {
      const auto kind = word == "endif" ? TemplateNode::Kind::kIf : TemplateNode::Kind::kFor;
      if (open_.empty() || open_.back().kind != kind) {
        fail(piece, "closes no open " + std::string(word == "endif" ? "{% if %}" : "{% for %}") +
                        (open_.empty() ? "" : " (the block open is `" + open_.back().branches.front().tag + "`)"));
      }
      TemplateNode done = std::move(open_.back());
      open_.pop_back();
      body().push_back(std::move(done));
    } else {
      fail(piece,
           "check renders only {% if %} / {% elif %} / {% else %} / {% endif %} and {% for %} / "
           "{% endfor %} statements; check a rendered copy of the spec instead");
    }
  }

  // `for NAME in EXPRESSION`: the name into the block, the expression into
  // the branch's condition.
  void read_loop(TemplateNode& block, TemplateBranch& branch) {
    const std::string& text = branch.condition;
    const std::size_t in = text.find(" in ");
    const std::string name = in == std::string::npos ? "" : std::string(trim(text.substr(0, in)));
    if (!is_name(name)) {
      throw SpecError{at_line(branch.line) + "`" + branch.tag +
                      "`: check reads only `for NAME in EXPRESSION` (one loop variable)"};
    }
    block.loop_variable = name;
    branch.condition = std::string(trim(text.substr(in + 4)));
  }

  [[noreturn]] static void fail(const TemplatePiece& piece, const std::string& problem) {
    throw SpecError{at_line(piece.line) + "`" + std::string(piece.text) + "` " + problem};
  }

  std::vector<TemplateNode> top_;
  std::vector<TemplateNode> open_;  // the blocks open, innermost last
  std::size_t next_id_ = 0;
};

}  // namespace

Result<std::vector<TemplateNode>> parse_template(const std::vector<TemplatePiece>& pieces) {
  try {
    return TreeBuilder().build(pieces);
  } catch (const SpecError& error) {
    return Status::failure(ProblemCode::kSyntax, "", error.message);
  }
}

}  // namespace gpusizer::osmo
