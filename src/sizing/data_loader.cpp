#include "gpusizer/sizing/data_loader.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gpusizer/sizing/policy_fields.h"
#include "gpusizer/util/contract.h"
#include "gpusizer/util/numbers.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {
namespace {

constexpr int64_t kMaxWorkers = 1024;
constexpr int64_t kMaxPrefetch = 1024;
constexpr int64_t kMaxBatch = 1'000'000;
constexpr int64_t kMaxDimension = 1'000'000;
constexpr std::size_t kMaxDimensions = 8;
// The largest batch or per-GPU buffer accepted: far beyond any node, and
// small enough that gpus x (buffer + perGpuBase) + podBase stays exact in
// int128 for every int64 GPU count.
constexpr int128 kMaxBytes = int128{1} << 62;

// a x b when it is at most kMaxBytes. REQUIRES: a, b >= 0.
std::optional<int128> times_within(int128 a, int128 b) {
  GPU_SIZER_REQUIRE(a >= 0 && b >= 0);
  int128 product = 0;
  if (__builtin_mul_overflow(a, b, &product) || product > kMaxBytes) return std::nullopt;
  return product;
}

// batch x product(sample) x dtype bytes; nullopt above kMaxBytes.
std::optional<int128> batch_bytes(const DataLoaderSpec& spec) {
  std::optional<int128> bytes = times_within(spec.batch, spec.dtype_bytes);
  for (int64_t dimension : spec.sample) {
    if (bytes) bytes = times_within(*bytes, dimension);
  }
  return bytes;
}

// ceil(workers x prefetch x batch_bytes x overhead / 1000), the one rounding
// at the end; nullopt above kMaxBytes.
std::optional<int128> buffer_bytes(const DataLoaderSpec& spec, int128 batch, Milli overhead) {
  int128 milli_bytes = 0;
  const bool overflow = __builtin_mul_overflow(int128{spec.workers} * spec.prefetch, batch, &milli_bytes) ||
                        __builtin_mul_overflow(milli_bytes, int128{overhead}, &milli_bytes);
  if (overflow) return std::nullopt;
  const int128 bytes = ceil_div(milli_bytes, 1000);
  if (bytes > kMaxBytes) return std::nullopt;
  return bytes;
}

}  // namespace

Result<DataLoaderSpec> parse_dataloader(std::string_view text, const DataLoaderPolicy& policy) {
  if (Status too_long = check_key_values_size(text, "workers=12"); !too_long.ok()) return too_long;
  if (trim(text).empty()) {
    return Status::invalid_argument(
        "is empty (expected parts such as \"workers=12,prefetch=3,batch=256,sample=3x224x224\")");
  }
  DataLoaderSpec spec;
  spec.prefetch = policy.default_prefetch;
  spec.dtype = "float32";  // seed 001's "x 4 bytes"
  std::vector<std::string_view> seen;
  // Kept to name them when a product of several parts is too large.
  std::string_view workers_part, sample_part;

  auto parts = read_key_values(text, "workers=12");
  if (!parts) return parts.status();
  for (const KeyValuePart& each : parts.value()) {
    const std::string_view part = each.text;
    const std::string_view key = each.key;
    const std::string_view value = each.value;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return part_error(part, "repeats key " + in_quotes(key));
    }
    seen.push_back(key);

    if (key == "workers") {
      const auto workers = read_whole(value, 0, kMaxWorkers);
      if (!workers) return part_error(part, workers.error());
      spec.workers = workers.value();
      workers_part = part;
    } else if (key == "prefetch") {
      const auto prefetch = read_whole(value, 1, kMaxPrefetch);
      if (!prefetch) return part_error(part, prefetch.error());
      spec.prefetch = prefetch.value();
    } else if (key == "batch") {
      const auto batch = read_whole(value, 1, kMaxBatch);
      if (!batch) return part_error(part, batch.error());
      spec.batch = batch.value();
    } else if (key == "sample") {
      const std::string problem = "must be 1 to " + std::to_string(kMaxDimensions) +
                                  " dimensions such as 3x224x224, each " + whole_number_text(1, kMaxDimension);
      std::size_t start = 0;
      while (start <= value.size()) {
        const std::size_t cross = std::min(value.find('x', start), value.size());
        const auto dimension = read_whole(value.substr(start, cross - start), 1, kMaxDimension);
        if (!dimension || spec.sample.size() == kMaxDimensions) return part_error(part, problem);
        spec.sample.push_back(dimension.value());
        start = cross + 1;
      }
      sample_part = part;
    } else if (key == "dtype") {
      const auto found = policy.dtype_bytes.find(value);
      if (found == policy.dtype_bytes.end()) {
        std::vector<std::string> known;
        for (const auto& entry : policy.dtype_bytes) known.push_back(entry.first);
        return part_error(part, "unknown dtype " + in_quotes(value) + " (known: " + join(known, ", ") + ")");
      }
      spec.dtype = found->first;
    } else {
      return part_error(part, "unknown key " + in_quotes(key) + " (known: workers, prefetch, batch, sample, dtype)");
    }
  }

  for (std::string_view required : {"workers", "batch", "sample"}) {
    if (std::find(seen.begin(), seen.end(), required) == seen.end()) {
      return Status::invalid_argument("has no part \"" + std::string(required) +
                                      "=...\" (workers, batch and sample are required)");
    }
  }
  // The default dtype may be missing from a policy file's dtypeBytes.
  const auto dtype = policy.dtype_bytes.find(spec.dtype);
  if (dtype == policy.dtype_bytes.end()) {
    return Status::invalid_argument("has no part \"dtype=...\" and the policy's dataLoader.dtypeBytes has no float32");
  }
  spec.dtype_bytes = dtype->second;

  // Checked here so data_loader_floor needs no failure path.
  const std::optional<int128> batch = batch_bytes(spec);
  if (!batch) {
    return part_error(sample_part, "a batch of " + std::to_string(spec.batch) + " such samples of " + spec.dtype +
                                       " is too large (more than 2^62 bytes)");
  }
  if (!buffer_bytes(spec, *batch, policy.overhead_factor)) {
    return part_error(workers_part,
                      "workers x prefetch x batch bytes x overhead factor is too large "
                      "(more than 2^62 bytes per GPU)");
  }
  return spec;
}

DataLoaderFloor data_loader_floor(const DataLoaderPolicy& policy, const DataLoaderSpec& spec, int64_t gpus) {
  GPU_SIZER_REQUIRE(gpus >= 1);
  const int128 batch = batch_bytes(spec).value_or(kMaxBytes);
  const int128 buffer = buffer_bytes(spec, batch, policy.overhead_factor).value_or(kMaxBytes);
  // Each term is below 2^64 and gpus below 2^63, so nothing here overflows.
  const int128 per_gpu = buffer + policy.per_gpu_base.value_ceil();
  const int128 bytes = int128{std::max<int64_t>(gpus, 0)} * per_gpu + policy.pod_base.value_ceil();
  const int128 granule = std::max<int64_t>(policy.round_up_to.value_ceil(), 1);
  const int128 rounded = ceil_div(bytes, granule) * granule;

  // The batch in whole mebibytes, rounded up, as seed 001 writes it ("147 MB").
  const std::string batch_mi = std::to_string(clamp_to_int64(ceil_div(batch, kMiB))) + "Mi";
  const std::string g = std::to_string(gpus);
  const std::string w = std::to_string(spec.workers);
  const std::string p = std::to_string(spec.prefetch);
  const std::string factor = milli_text(policy.overhead_factor);
  const std::string per_gpu_base = policy.per_gpu_base.to_string();
  const std::string pod_base = policy.pod_base.to_string();

  DataLoaderFloor floor;
  floor.memory = Quantity::from_bytes(clamp_to_int64(rounded));
  floor.batch_bytes = clamp_to_int64(batch);
  floor.buffer_bytes_per_gpu = clamp_to_int64(buffer);
  floor.brief = g + "x(" + w + "x" + p + "x" + batch_mi + " x" + factor + "+" + per_gpu_base + ")+" + pod_base;
  floor.detail = g + " x (" + w + " workers x " + p + " prefetch x " + batch_mi + " batch x " + factor + " + " +
                 per_gpu_base + ") + " + pod_base;
  return floor;
}

void DataLoaderPolicy::read(const YAML::Node& node, bool complete) {
  using namespace policy_fields;  // NOLINT(google-build-using-namespace)
  DataLoaderPolicy& out = *this;
  const Block block(node, "dataLoader", complete,
                    {"overheadFactor", "perGpuBase", "podBase", "defaultPrefetch", "roundUpTo", "dtypeBytes"});
  block.read("overheadFactor", [&](const auto& value, const auto& path) {
    out.overhead_factor = read_decimal(value, path, 1000, 1000000);
  });
  block.read("perGpuBase", [&](const auto& value, const auto& path) {
    out.per_gpu_base = read_quantity(value, path, Zero::kAllowed);
  });
  block.read("podBase",
             [&](const auto& value, const auto& path) { out.pod_base = read_quantity(value, path, Zero::kAllowed); });
  block.read("defaultPrefetch",
             [&](const auto& value, const auto& path) { out.default_prefetch = read_int(value, path, 1); });
  block.read("roundUpTo", [&](const auto& value, const auto& path) { out.round_up_to = read_quantity(value, path); });
  block.read("dtypeBytes", [&](const auto& value, const auto& path) {
    out.dtype_bytes = read_named<int64_t>(
        value, path, [](const auto& item, const auto& item_path) { return read_int(item, item_path, 1); });
  });
}

}  // namespace gpusizer
