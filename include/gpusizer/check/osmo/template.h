// The structure of an OSMO template: its pieces (scanner.h) nested by the
// `{% if %}` / `{% elif %}` / `{% else %}` / `{% endif %}` and
// `{% for x in ... %}` / `{% endfor %}` blocks NVIDIA's specs use. Only
// the structure is read here; the renderer evaluates the conditions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpusizer/check/osmo/scanner.h"
#include "gpusizer/util/result.h"

namespace gpusizer::osmo {

struct TemplateNode;

// One branch of an if block, or the body of a for block.
struct TemplateBranch {
  std::string tag;        // the opening tag as written, e.g. `{% elif big %}`
  std::string condition;  // if / elif: the condition; for: the iterable; else: empty
  bool is_else = false;
  int line = 0;  // 1-based line of the tag
  std::vector<TemplateNode> body;
};

struct TemplateNode {
  enum class Kind {
    kPiece,  // text, an expression, a kept token or a comment
    kIf,     // branches: if, then each elif, then an else (is_else) when written
    kFor,    // branches[0]: the body, run once per item of its condition
  };
  Kind kind = Kind::kPiece;
  TemplatePiece piece;  // kPiece
  std::vector<TemplateBranch> branches;
  std::string loop_variable;  // kFor
  // kIf, kFor: the block's number in the order the blocks open in the file,
  // so a rendering can name a block to render in another way.
  std::size_t id = 0;
};

// The pieces as a tree. Fails, naming the line, on a statement other than
// if / elif / else / endif / for / endfor ({% set %}, {% macro %}...), an
// elif, else or end tag that matches no open block, a block never closed,
// and a for that does not read `for NAME in EXPRESSION`.
Result<std::vector<TemplateNode>> parse_template(const std::vector<TemplatePiece>& pieces);

}  // namespace gpusizer::osmo
