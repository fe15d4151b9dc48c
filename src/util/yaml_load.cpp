#include "gpusizer/util/yaml_load.h"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include <yaml-cpp/eventhandler.h>

#include "gpusizer/util/strings.h"

namespace gpusizer {

namespace {

// An anchor's name is as long as its writer made it: messages quote at
// most this much of it.
constexpr std::size_t kQuotedNameBytes = 64;

// Counts, from one document's parser events, the nodes the document
// expands to and how deeply they nest. Only anchored nodes are remembered
// (their totals, for their aliases), so counting costs no memory per node.
class ExpansionCounter : public YAML::EventHandler {
 public:
  explicit ExpansionCounter(YamlBudget& budget) : budget_(budget) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    leaf(mark, anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (anchor >= anchors_.size()) throw YAML::ParserException(mark, "an alias names no anchor");
    const Anchored& named = anchors_[anchor];
    if (named.open) {
      const std::string name = truncate_utf8(named.name, kQuotedNameBytes);
      throw YAML::ParserException(
          mark, "the alias *" + name + " is inside the node its anchor &" + name + " names, so it repeats without end");
    }
    add(mark, named.nodes, named.depth);
    nested(named.depth);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Anchored {
    std::size_t nodes = 0;
    std::size_t depth = 0;  // collections nested, itself included: 0 for a scalar
    bool open = false;      // still being read: an alias to it is inside it
    std::string name;
  };
  struct Collection {
    std::size_t nodes_before;  // the budget's count before it
    YAML::anchor_t anchor;
    std::size_t deepest = 0;  // the depth of its deepest child
  };

  // Counts `nodes` more nodes, nested `depth` levels below the collections
  // being read.
  void add(const YAML::Mark& mark, std::size_t nodes, std::size_t depth) {
    const YamlBounds& bounds = budget_.bounds;
    if (nodes > bounds.max_nodes - std::min(budget_.nodes, bounds.max_nodes)) {
      throw YAML::ParserException(mark, too_many_nodes(bounds));
    }
    if (open_.size() + depth > bounds.max_depth) throw YAML::ParserException(mark, too_deep(bounds));
    budget_.nodes += nodes;
  }

  // A child `depth` levels deep was read into the innermost collection.
  void nested(std::size_t depth) {
    if (!open_.empty()) open_.back().deepest = std::max(open_.back().deepest, depth);
  }

  void remember(YAML::anchor_t anchor, Anchored anchored) {
    if (anchor == YAML::NullAnchor) return;
    if (anchor >= anchors_.size()) anchors_.resize(anchor + 1);
    anchored.name = std::move(anchor_name_);
    anchors_[anchor] = std::move(anchored);
  }

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    add(mark, 1, 0);
    remember(anchor, Anchored{1, 0, false, ""});
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    add(mark, 1, 1);
    remember(anchor, Anchored{0, 0, true, ""});
    open_.push_back(Collection{budget_.nodes - 1, anchor});
  }

  void close() {
    const Collection done = open_.back();
    open_.pop_back();
    const std::size_t depth = done.deepest + 1;
    if (done.anchor != YAML::NullAnchor) {
      Anchored& anchored = anchors_[done.anchor];
      anchored.nodes = budget_.nodes - done.nodes_before;
      anchored.depth = depth;
      anchored.open = false;
    }
    nested(depth);
  }

  YamlBudget& budget_;
  std::vector<Collection> open_;
  std::vector<Anchored> anchors_;  // by yaml-cpp's anchor number, counted from 1 in each document
  std::string anchor_name_;        // of the node whose event comes next
};

}  // namespace

std::string too_many_nodes(const YamlBounds& bounds) {
  std::string message =
      "holds more than " + std::to_string(bounds.max_nodes) + " YAML nodes, an alias counting as every node it repeats";
  if (!bounds.nodes_flag.empty()) message += " (" + std::string(bounds.nodes_flag) + ")";
  return message;
}

std::string too_deep(const YamlBounds& bounds) {
  return "nests deeper than " + std::to_string(bounds.max_depth) + " levels";
}

YAML::Node load_yaml(std::string_view text, YamlBudget& budget) {
  std::istringstream stream{std::string(text)};
  {
    YAML::Parser parser(stream);
    ExpansionCounter counter(budget);
    parser.HandleNextDocument(counter);
  }
  stream.clear();
  stream.seekg(0);
  return YAML::Load(stream);
}

}  // namespace gpusizer
