// A rule's settings: its block of the policy file (sharedMemory,
// gpuMemory, nodeFit, ...), declared by the rule next to its code and
// registered with it in sizing_rules() (rule.h). The policy parser knows no
// rule: it reads each registered block under its key, and the policy holds
// every rule's settings as their own types (Policy::rule_settings).
//
// A settings type declares, for SettingsBlockOf<Settings>:
//   static constexpr std::string_view kKey = "sharedMemory";  // its key
//   void read(const YAML::Node& node, bool complete);
//       reads the block over the values it holds (the embedded default's):
//       a field given replaces its value; with `complete` (the embedded
//       default itself) every field is required. Throws
//       policy_fields::FieldError naming the field's path.
//   static void finish(Policy& policy, const YAML::Node& root);  // optional
//       after every block is read: checks that need the whole policy (a
//       profile or GPU model it names exists) and values derived from it.
#pragma once

#include <any>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace YAML {
class Node;
}

namespace gpusizer {

struct Policy;

class SettingsBlock {
 public:
  virtual ~SettingsBlock() = default;
  virtual std::string_view key() const = 0;
  // The settings before any file is read: the embedded default fills them.
  virtual std::any initial() const = 0;
  virtual void read(const YAML::Node& node, bool complete, std::any& settings) const = 0;
  virtual void finish(Policy& policy, const YAML::Node& root) const = 0;
};

template <class Settings>
class SettingsBlockOf final : public SettingsBlock {
 public:
  std::string_view key() const override { return Settings::kKey; }
  std::any initial() const override { return Settings{}; }
  void read(const YAML::Node& node, bool complete, std::any& settings) const override {
    std::any_cast<Settings&>(settings).read(node, complete);
  }
  void finish(Policy& policy, const YAML::Node& root) const override {
    if constexpr (requires { Settings::finish(policy, root); }) Settings::finish(policy, root);
  }
};

// The blocks of the rules of sizing_rules() that have settings, in its
// order (src/sizing/rules/rule_list.cpp).
std::span<const SettingsBlock* const> settings_blocks();

// Every rule's settings, each as its own type, in settings_blocks() order.
class RuleSettings {
 public:
  // Each block's initial settings.
  RuleSettings();

  template <class Settings>
  const Settings& get() const {
    return std::any_cast<const Settings&>(blocks_[index_of<Settings>()]);
  }
  template <class Settings>
  Settings& edit() {
    return std::any_cast<Settings&>(blocks_[index_of<Settings>()]);
  }
  // The settings of settings_blocks()[index], for the parser.
  std::any& at(std::size_t index) { return blocks_[index]; }

 private:
  // Where the block of `key` is; a type no rule registers is a programming
  // error (std::logic_error).
  static std::size_t index_of_key(std::string_view key);
  template <class Settings>
  static std::size_t index_of() {
    // The registered blocks never change, so the search runs once per type.
    static const std::size_t index = index_of_key(Settings::kKey);
    return index;
  }

  std::vector<std::any> blocks_;
};

}  // namespace gpusizer
