#include "gpusizer/admission/serving_flags.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <vector>

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

}  // namespace

void read_serving_flags(JsonView command, JsonView args, ContainerFacts& container) {
  std::vector<std::string_view> words;
  for (const JsonView list : {command, args}) {
    list.for_each_element([&](JsonView element) {
      const std::string_view text = element.string();
      std::size_t start = 0;
      while (start < text.size()) {
        const std::size_t end = std::min(text.find_first_of(" \t\n", start), text.size());
        if (end > start) words.push_back(text.substr(start, end - start));
        start = end + 1;
      }
    });
  }
  // The value of the first of `names` present, unquoted; empty: none.
  const auto flag = [&](std::initializer_list<std::string_view> names) -> std::string_view {
    for (std::size_t i = 0; i < words.size(); ++i) {
      for (const std::string_view name : names) {
        if (words[i] == name && i + 1 < words.size()) return trim_quotes(words[i + 1]);
        if (words[i].starts_with(name) && words[i].size() > name.size() && words[i][name.size()] == '=') {
          return trim_quotes(words[i].substr(name.size() + 1));
        }
      }
    }
    return {};
  };
  // Most containers give none of them: nothing to parse (a parse of
  // nothing words its error, thousands of times in a large pod).
  if (words.empty()) return;
  const auto share = read_decimal(flag({"--gpu-memory-utilization"}), 3, 1, 1000);
  container.gpu_memory_utilization = share ? share.value() : 0;
  const auto tensor = read_whole(flag({"--tensor-parallel-size", "-tp"}), 1, 1'000'000);
  container.tensor_parallel = tensor ? tensor.value() : 0;
  const auto pipeline = read_whole(flag({"--pipeline-parallel-size", "-pp"}), 1, 1'000'000);
  container.pipeline_parallel = pipeline ? pipeline.value() : 0;
}

}  // namespace gpusizer
