#include "gpusizer/admission/serving_flags.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include "gpusizer/util/numbers.h"

namespace gpusizer {

namespace {

// "0.9" from "'0.9'" or "\"0.9\"", as a shell line quotes it.
std::string_view trim_quotes(std::string_view value) {
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front()) {
    return value.substr(1, value.size() - 2);
  }
  return value;
}

enum Flag { kGpuMemoryUtilization, kTensorParallel, kPipelineParallel, kFlagCount };

struct FlagName {
  std::string_view name;
  Flag flag;
};
constexpr std::array<FlagName, 5> kFlagNames = {{
    {"--gpu-memory-utilization", kGpuMemoryUtilization},
    {"--tensor-parallel-size", kTensorParallel},
    {"-tp", kTensorParallel},
    {"--pipeline-parallel-size", kPipelineParallel},
    {"-pp", kPipelineParallel},
}};

// The value of each flag's first occurrence, unquoted, in one pass over
// the words of command and args, as written: "--flag value" or
// "--flag=value". Empty: not given. Nothing is copied or allocated: a
// container's command is read on every review.
class FlagValues {
 public:
  void read_word(std::string_view word) {
    if (after_) {
      keep(*after_, word);
      after_.reset();
    }
    for (const FlagName& name : kFlagNames) {
      if (word == name.name) {
        after_ = name.flag;
      } else if (word.size() > name.name.size() && word.starts_with(name.name) && word[name.name.size()] == '=') {
        keep(name.flag, word.substr(name.name.size() + 1));
      }
    }
  }

  std::string_view operator[](Flag flag) const { return values_[flag]; }

 private:
  void keep(Flag flag, std::string_view value) {
    if (!found_[flag]) values_[flag] = trim_quotes(value);
    found_[flag] = true;
  }

  std::array<std::string_view, kFlagCount> values_{};
  std::array<bool, kFlagCount> found_{};
  std::optional<Flag> after_;  // the flag the last word named: this word is its value
};

// The flag's value read as read(text) reads it; 0 when not given or not a
// number in range (the reader's message is worded only when there is a
// value to judge).
template <typename Read>
int64_t flag_number(std::string_view text, Read read) {
  if (text.empty()) return 0;
  const auto value = read(text);
  return value ? value.value() : 0;
}

}  // namespace

void read_serving_flags(JsonView command, JsonView args, ContainerFacts& container) {
  FlagValues flags;
  for (const JsonView list : {command, args}) {
    list.for_each_element([&](JsonView element) {
      const std::string_view text = element.string();
      std::size_t start = 0;
      while (start < text.size()) {
        const std::size_t end = std::min(text.find_first_of(" \t\n", start), text.size());
        if (end > start) flags.read_word(text.substr(start, end - start));
        start = end + 1;
      }
    });
  }
  container.gpu_memory_utilization =
      flag_number(flags[kGpuMemoryUtilization], [](std::string_view text) { return read_decimal(text, 3, 1, 1000); });
  container.tensor_parallel =
      flag_number(flags[kTensorParallel], [](std::string_view text) { return read_whole(text, 1, 1'000'000); });
  container.pipeline_parallel =
      flag_number(flags[kPipelineParallel], [](std::string_view text) { return read_whole(text, 1, 1'000'000); });
}

std::string command_line(JsonView command, JsonView args, std::size_t max_bytes) {
  std::string line;
  for (const JsonView list : {command, args}) {
    list.for_each_element([&](JsonView element) {
      if (line.size() >= max_bytes) return;
      if (!line.empty()) line += ' ';
      line += element.string().substr(0, max_bytes - line.size());
    });
  }
  return line;
}

}  // namespace gpusizer
