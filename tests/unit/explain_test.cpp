// explain's rows come from the typed explanation, never from the wording of
// a message: a rule whose message is reworded keeps its row and its place.
#include "gpusizer/check/explain.h"

#include <gtest/gtest.h>

namespace gpusizer::explain_test {
namespace {

std::vector<std::string> titles(const std::vector<ExplainRow>& rows) {
  std::vector<std::string> out;
  for (const ExplainRow& row : rows) out.push_back(row.title);
  return out;
}

TEST(ExplainRows, ARewordedMessageStillShowsUnderItsRule) {
  Explanation written;
  written.rules = {{RuleKind::kTable, "cpu 32", "train row for 4 GPUs"}};
  Explanation mutated;
  mutated.rules = {{RuleKind::kGpuMemory, "-", "an entirely reworded message, no rule name in it"}};
  const std::vector<ExplainRow> rows = explain_rows(written, mutated);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].title, "GPU memory");
  EXPECT_EQ(rows[1].detail, "an entirely reworded message, no rule name in it");
}

TEST(ExplainRows, FloorsFromTheWrittenPassChecksAndContainersFromTheMutated) {
  Explanation written;
  written.rules = {{RuleKind::kNodeFit, "-", "written: not shown"},
                   {RuleKind::kDataLoader, "memory 241Gi", "loader"},
                   {RuleKind::kTable, "cpu 32", "table"}};
  written.binding = BindingRow{"memory 241Gi", "data loader: ..."};
  written.containers = {{"trainer", "cpu 1", "written: not shown"}};
  Explanation mutated;
  mutated.rules = {{RuleKind::kNodeFit, "4 GPUs", "fits"},
                   {RuleKind::kTable, "cpu 32", "mutated: not shown"},
                   {RuleKind::kGpuMemory, "-", "no annotation"}};
  mutated.containers = {{"trainer", "cpu 32, memory 241Gi", "requests it runs with (4 GPUs)"}};
  const std::vector<ExplainRow> rows = explain_rows(written, mutated);
  // Rules in the order of sizing_rules(), then the binding floor, then the containers.
  EXPECT_EQ(titles(rows), (std::vector<std::string>{"table", "data loader", "GPU memory", "node fit", "binding",
                                                    "container \"trainer\""}));
  EXPECT_EQ(rows[0].detail, "table");
  EXPECT_EQ(rows[3].detail, "fits");
  EXPECT_EQ(rows[5].floor, "cpu 32, memory 241Gi");
}

}  // namespace
}  // namespace gpusizer::explain_test
