#include "gpusizer/check/explain.h"

#include "gpusizer/util/strings.h"

namespace gpusizer {

std::vector<ExplainRow> explain_rows(const Explanation& written, const Explanation& mutated) {
  std::vector<ExplainRow> rows;
  for (const AskRow& row : written.asks) rows.push_back({"ask", row.holder + ": " + row.ask, row.detail});
  for (const Rule* rule : sizing_rules()) {
    const Explanation& pass = rule->stage() == Rule::Stage::kFloor ? written : mutated;
    for (const RuleRow& row : pass.rules) {
      if (row.rule == rule->kind())
        rows.push_back({std::string(rule_name(row.rule)), row.floor, row.detail, row.parts});
    }
  }
  if (written.binding) rows.push_back({"binding", written.binding->floor, written.binding->detail});
  for (const ContainerRow& row : mutated.containers) {
    rows.push_back(
        {row.pod_level ? "pod " + row.container : "container " + in_quotes(row.container), row.requests, row.detail});
  }
  return rows;
}

}  // namespace gpusizer
