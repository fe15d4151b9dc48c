#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpusizer/sizing/rule.h"
#include "gpusizer/sizing/rules/data_loader_rule.h"
#include "gpusizer/sizing/rules/gpu_memory_rule.h"
#include "gpusizer/sizing/rules/history_rule.h"
#include "gpusizer/sizing/rules/node_caps_rule.h"
#include "gpusizer/sizing/rules/node_fit_rule.h"
#include "gpusizer/sizing/rules/offload_rule.h"
#include "gpusizer/sizing/rules/shared_memory_rule.h"
#include "gpusizer/sizing/rules/table_rule.h"

namespace gpusizer {

std::string_view rule_name(RuleKind rule) {
  switch (rule) {
    case RuleKind::kTable: return "table";
    case RuleKind::kSharedMemory: return "/dev/shm";
    case RuleKind::kDataLoader: return "data loader";
    case RuleKind::kHistory: return "history";
    case RuleKind::kOffload: return "offload";
    case RuleKind::kNodeCaps: return "node caps";
    case RuleKind::kGpuMemory: return "GPU memory";
    case RuleKind::kNodeFit: return "node fit";
  }
  return "rule";
}

std::string_view to_string(DenialReason reason) {
  switch (reason) {
    case DenialReason::kInvalid: return "invalid";
    case DenialReason::kUnknownProfile: return "unknown_profile";
    case DenialReason::kMaxGpus: return "max_gpus";
    case DenialReason::kMemory: return "memory";
    case DenialReason::kNodeCap: return "node_cap";
    case DenialReason::kShm: return "shm";
    case DenialReason::kVram: return "vram";
    case DenialReason::kNodeFit: return "node_fit";
  }
  return "invalid";
}

std::span<const Rule* const> sizing_rules() {
  static const TableRule table;
  static const SharedMemoryRule shared_memory;
  static const DataLoaderRule data_loader;
  static const HistoryRule history;
  static const OffloadRule offload;
  static const NodeCapsRule node_caps;
  static const GpuMemoryRule gpu_memory;
  static const NodeFitRule node_fit;
  static const auto rules = std::to_array<const Rule*>(
      {&table, &shared_memory, &data_loader, &history, &offload, &node_caps, &gpu_memory, &node_fit});
  return rules;
}

std::span<const SettingsBlock* const> settings_blocks() {
  static const std::vector<const SettingsBlock*> blocks = [] {
    std::vector<const SettingsBlock*> found;
    for (const Rule* rule : sizing_rules()) {
      if (const SettingsBlock* block = rule->settings()) found.push_back(block);
    }
    return found;
  }();
  return blocks;
}

RuleSettings::RuleSettings() {
  for (const SettingsBlock* block : settings_blocks()) blocks_.push_back(block->initial());
}

std::size_t RuleSettings::index_of_key(std::string_view key) {
  const auto blocks = settings_blocks();
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i]->key() == key) return i;
  }
  throw std::logic_error("no rule of sizing_rules() has the policy block " + std::string(key));
}

}  // namespace gpusizer
