// The scanner of OSMO's Jinja templates: a template's text cut into pieces
// (plain text, `{{ expression }}`, OSMO's special tokens, `{# comments #}`),
// and an expression's text cut into tokens. What it cannot cut is a typed
// error; nothing is evaluated here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/util/result.h"

namespace gpusizer::osmo {

// How messages name a line of the spec: "line 12: ", or "" when unknown (0).
std::string at_line(int line);

struct TemplatePiece {
  enum class Kind {
    kText,        // copied as it is
    kExpression,  // `{{ ... }}`: `inner` is the expression
    kKept,        // a special token OSMO fills in later ({{output}}, {{input:0}}, ...), kept as written
    kComment,     // `{# ... #}`: dropped, only its line breaks stay
    kStatement,   // `{% ... %}`: `inner` is the statement (if, for...), read by template.h
  };
  Kind kind = Kind::kText;
  std::string_view text;   // as written, braces included
  std::string_view inner;  // kExpression, kStatement: between the braces, without whitespace-control marks
                           // (`-`, `+`); the marks strip nothing, as OSMO's specs use none
  int line = 1;            // 1-based line where the piece starts
};

// The pieces of a template, in order; their texts together are the whole
// text. Fails, naming the line, on what OSMO cannot render either: a `{{`,
// `{%` or `{#` never closed.
Result<std::vector<TemplatePiece>> scan_template(std::string_view text);

struct Token {
  enum class Kind { kName, kInt, kFloat, kString, kOp, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;  // kString: the string's value, escapes resolved; otherwise as written
  int64_t i = 0;     // kInt
  double f = 0;      // kFloat
};

// The tokens of an expression, ending with one kEnd. Names, integers and
// floats as Python writes them (underscores between digits), strings in
// single or double quotes, and operators (two-character ones: // ** == !=
// <= >=). Fails on an unterminated string or an integer beyond int64, with
// the reason the expression cannot be evaluated.
Result<std::vector<Token>> scan_expression(std::string_view expression);

}  // namespace gpusizer::osmo
