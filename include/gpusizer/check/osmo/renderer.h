// Rendering an OSMO workflow spec as the OSMO service does before it
// creates a pod per task (docs/osmo-workflow-spec.md, "Templates"): the
// text split into top-level sections, the variables from default-values
// and --set, and the workflow section with every `{{ expression }}`
// replaced by its value. The rendering is kept twice: as OSMO would parse
// it, and with each expression replaced by a marker, so the checker can tell
// a value written in the file from one a variable or an expression gave.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusizer/check/osmo/values.h"
#include "gpusizer/util/result.h"
#include "gpusizer/util/yaml_load.h"

namespace gpusizer::osmo {

// A top-level section: a line matching ^[A-Za-z][A-Za-z0-9_-]*: starts one
// (OSMO's parse_workflow_spec); text before the first is dropped.
struct Section {
  std::string key;
  std::size_t first_line = 0;  // 0-based, the `key:` line
  std::size_t end_line = 0;    // one past the last line
};

std::vector<std::string_view> split_lines(std::string_view text);
// The key of the section a line starts, if it starts one.
std::optional<std::string> section_key(std::string_view line);
std::vector<Section> find_sections(const std::vector<std::string_view>& lines);
// The section's lines in place and every other line empty, so YAML marks
// count the lines of the whole file.
std::string padded_section(const std::vector<std::string_view>& lines, const Section& section);

// The template's variables: default-values read as YAML from the raw text
// (OSMO never renders it; PyYAML's types), then each --set value, typed as
// `osmo workflow submit` types it. `defaults` may be null (no section).
// Fails on YAML errors, YAML past `bounds`, and a default-values that is
// not a mapping.
Result<Variables> template_variables(const std::vector<std::string_view>& lines, const Section* defaults,
                                     const std::map<std::string, std::string>& set_values, const YamlBounds& bounds);

// One `{{ ... }}` of the workflow section (OSMO's special tokens excluded).
struct Substitution {
  std::string source;  // as written, braces included
  int line = 0;        // 1-based line of the file
  std::string plain_variable;
  bool evaluated = false;
  std::string problem;    // why it was not evaluated
  std::string undefined;  // the variable with no value that stopped it, if that did
};

// A `{{ }}` stopped by a variable with no value; OSMO fails the submit on it.
struct MissingVariable {
  std::string name;
  int line = 0;
};

// An {% if %} or {% for %} block whose condition (or items) check could not
// evaluate, so which text it gives is unknown.
struct Undecided {
  std::size_t id = 0;    // TemplateNode::id
  int line = 0;          // of the tag with the unknown condition
  std::string tag;       // as written
  std::string variable;  // the variable with no value that stopped it, if that did
  std::string problem;   // "variable x has no value", or why it was not evaluated
  // What the block could give: for an if, each branch from the unknown one
  // on (and nothing, without an else); for a for, nothing or its body once.
  std::size_t alternatives = 0;
};

// For a block by its id, which of its alternatives to render when its
// condition is unknown; the first by default.
using BlockChoices = std::map<std::size_t, std::size_t>;

// A branch of an {% if %} block the variables decided against: its text is
// not in the rendering.
struct Skipped {
  std::size_t id = 0;      // TemplateNode::id of the if block
  std::size_t branch = 0;  // index of the branch left out
  int line = 0;            // of the tag that left it out: its own false condition, or the branch taken instead
  std::string tag;         // that tag as written
};

// For an if block by its id, the branch to render whatever its condition
// gives (the index of the branch; one past the last renders none).
using ForcedBranches = std::map<std::size_t, std::size_t>;

struct Rendered {
  std::string text;            // what OSMO would parse
  std::string marked;          // the same with each substitution replaced by its marker
  std::vector<int> file_line;  // the 1-based file line of each rendered line
  std::vector<Substitution> subs;
  std::vector<MissingVariable> missing;  // in file order, repeats kept
  std::vector<Undecided> undecided;      // in the order first met
  std::vector<Skipped> skipped;          // branches of decided if blocks left out, in the order met
};

// The marker of substitution `index` in Rendered::marked:
// kMarkerHead, the index in decimal, kMarkerTail.
inline constexpr std::string_view kMarkerHead = "zzgpusizerexpr";
inline constexpr std::string_view kMarkerTail = "zz";

// Renders the text: `{{ }}` substituted, {% if %} branches chosen and
// {% for %} bodies repeated with the variables' values. An expression check
// cannot evaluate, or whose variable has no value, renders as a placeholder
// and its Substitution says why; a block it cannot decide renders the
// alternative `choices` names; an if block `forced` names renders the
// branch it gives. Statement tags render as nothing (their line breaks
// stay), as Jinja's defaults do. Fails, naming lines, on what scan_template
// and parse_template refuse.
Result<Rendered> render(std::string_view text, const Variables& variables, const BlockChoices& choices = {},
                        const ForcedBranches& forced = {});

// The message for variables with no value, each named once with its first
// line: "variables a (line 3), b (line 9) have no value, and OSMO fails the
// submit: ...", or, when sizing does not read them, the warning that check
// went on without them. Empty for none.
std::string missing_variables_message(const std::vector<MissingVariable>& missing, bool sizing_reads_them = true);

}  // namespace gpusizer::osmo
