#include "gpusizer/check/osmo/scanner.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "gpusizer/check/osmo/values.h"
#include "gpusizer/util/strings.h"

namespace gpusizer::osmo {

namespace {

// OSMO hides these from Jinja when written exactly so (no spaces):
// {{(uuid|workflow_id|output|input:[^}]+|host:[^}]+)}}. Their length, or 0.
std::size_t special_token_length(std::string_view text) {
  const std::string_view rest = text.substr(2);
  for (std::string_view word : {"uuid}}", "workflow_id}}", "output}}"}) {
    if (rest.starts_with(word)) return 2 + word.size();
  }
  for (std::string_view prefix : {"input:", "host:"}) {
    if (!rest.starts_with(prefix)) continue;
    const std::size_t close = rest.find('}', prefix.size());
    if (close == std::string_view::npos || close == prefix.size()) return 0;
    if (rest.substr(close, 2) != "}}") return 0;
    return 2 + close + 2;
  }
  return 0;
}

// The end of the expression opened at the start of `text` (the index after
// its `}}`), skipping string literals; npos when it is never closed.
std::size_t expression_end(std::string_view text) {
  char quote = 0;
  for (std::size_t i = 2; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      return i + 2;
    }
  }
  return std::string_view::npos;
}

// Where the next `{{`, `{%` or `{#` starts, or the end of the text.
std::size_t next_tag(std::string_view text, std::size_t from) {
  for (std::size_t i = text.find('{', from); i != std::string_view::npos; i = text.find('{', i + 1)) {
    if (i + 1 < text.size() && (text[i + 1] == '{' || text[i + 1] == '%' || text[i + 1] == '#')) return i;
  }
  return text.size();
}

// A tag's inside without its whitespace-control marks (`{{- x +}}`).
std::string_view without_whitespace_control(std::string_view inner) {
  if (!inner.empty() && (inner.front() == '-' || inner.front() == '+')) inner.remove_prefix(1);
  if (!inner.empty() && (inner.back() == '-' || inner.back() == '+')) inner.remove_suffix(1);
  return inner;
}

int line_breaks(std::string_view text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

std::string at_line(int line) { return line > 0 ? "line " + std::to_string(line) + ": " : ""; }

Result<std::vector<TemplatePiece>> scan_template(std::string_view text) {
  std::vector<TemplatePiece> pieces;
  int line = 1;
  std::size_t i = 0;
  auto add = [&](TemplatePiece::Kind kind, std::size_t length, std::string_view inner = {}) {
    const std::string_view piece = text.substr(i, length);
    pieces.push_back({kind, piece, inner, line});
    line += line_breaks(piece);
    i += length;
  };
  while (i < text.size()) {
    const std::string_view rest = text.substr(i);
    if (rest.starts_with("{%")) {
      const std::size_t close = rest.find("%}");
      if (close == std::string_view::npos) {
        return Status::failure(ProblemCode::kSyntax, "",
                               at_line(line) +
                                   "`{%` opens a Jinja statement that is never closed with `%}`; OSMO fails to "
                                   "render this spec too");
      }
      add(TemplatePiece::Kind::kStatement, close + 2, without_whitespace_control(rest.substr(2, close - 2)));
      continue;
    }
    if (rest.starts_with("{#")) {
      const std::size_t close = rest.find("#}");
      if (close == std::string_view::npos) {
        return Status::failure(ProblemCode::kSyntax, "",
                               at_line(line) +
                                   "`{#` opens a Jinja comment that is never closed with `#}`; OSMO fails to "
                                   "render this spec too (a shell `${#ARRAY[@]}` needs `{{ '{#' }}` or a space)");
      }
      add(TemplatePiece::Kind::kComment, close + 2);
    } else if (rest.starts_with("{{")) {
      if (const std::size_t special = special_token_length(rest)) {
        add(TemplatePiece::Kind::kKept, special);
        continue;
      }
      const std::size_t end = expression_end(rest);
      if (end == std::string_view::npos) {
        return Status::failure(ProblemCode::kSyntax, "",
                               at_line(line) + "`{{` is never closed with `}}`; OSMO fails to render this spec too");
      }
      add(TemplatePiece::Kind::kExpression, end, without_whitespace_control(rest.substr(2, end - 4)));
    } else {
      add(TemplatePiece::Kind::kText, next_tag(text, i + 1) - i);
    }
  }
  return pieces;
}

Result<std::vector<Token>> scan_expression(std::string_view expr) {
  std::vector<Token> tokens;
  std::size_t p = 0;
  auto digits_from = [&](std::size_t q) {
    while (q < expr.size() && (std::isdigit(static_cast<unsigned char>(expr[q])) || expr[q] == '_')) ++q;
    return q;
  };
  while (p < expr.size()) {
    const char c = expr[p];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++p;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t q = p;
      while (q < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[q])) || expr[q] == '_')) ++q;
      tokens.push_back({Token::Kind::kName, std::string(expr.substr(p, q - p))});
      p = q;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t q = digits_from(p);
      bool is_float = false;
      if (q + 1 < expr.size() && expr[q] == '.' && std::isdigit(static_cast<unsigned char>(expr[q + 1]))) {
        is_float = true;
        q = digits_from(q + 1);
      }
      if (q < expr.size() && (expr[q] == 'e' || expr[q] == 'E')) {
        std::size_t r = q + 1;
        if (r < expr.size() && (expr[r] == '+' || expr[r] == '-')) ++r;
        if (r < expr.size() && std::isdigit(static_cast<unsigned char>(expr[r]))) {
          is_float = true;
          q = r;
          while (q < expr.size() && std::isdigit(static_cast<unsigned char>(expr[q]))) ++q;
        }
      }
      Token token{is_float ? Token::Kind::kFloat : Token::Kind::kInt, std::string(expr.substr(p, q - p))};
      std::string cleaned = token.text;
      cleaned.erase(std::remove(cleaned.begin(), cleaned.end(), '_'), cleaned.end());
      if (is_float) {
        token.f = std::strtod(cleaned.c_str(), nullptr);
      } else {
        auto i = python_int(cleaned);
        if (!i) return Status::failure(ProblemCode::kTooLarge, "", "the number " + token.text + " is too large");
        token.i = *i;
      }
      tokens.push_back(token);
      p = q;
    } else if (c == '\'' || c == '"') {
      std::string text;
      std::size_t q = p + 1;
      for (; q < expr.size() && expr[q] != c; ++q) {
        if (expr[q] == '\\' && q + 1 < expr.size()) {
          const char e = expr[++q];
          text += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        } else {
          text += expr[q];
        }
      }
      if (q >= expr.size()) return Status::failure(ProblemCode::kSyntax, "", "an unterminated string");
      tokens.push_back({Token::Kind::kString, text});
      p = q + 1;
    } else {
      static const char* const kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
      std::string op(1, c);
      for (const char* two : kTwo) {
        if (expr.substr(p, 2) == two) op = two;
      }
      tokens.push_back({Token::Kind::kOp, op});
      p += op.size();
    }
  }
  tokens.push_back({Token::Kind::kEnd, ""});
  return tokens;
}

}  // namespace gpusizer::osmo
