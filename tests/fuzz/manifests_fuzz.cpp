// read_manifests (what `gpu-sizer check` reads files with) on arbitrary
// bytes: an error naming the source, or documents that write_manifests
// (what --fix writes) turns back into text that reads as the same
// documents. Every file is read; the round trip is checked for files of
// mappings, the only ones --fix writes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_check.h"
#include "gpusizer/check/manifests.h"

namespace gpusizer::fuzz {
namespace {

const std::string kSource = "fuzz.yaml";

std::string show(const std::vector<nlohmann::json>& documents) {
  return nlohmann::json(documents).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void check_manifests(std::string_view text) {
  Result<ManifestFile> file = read_manifests(text, kSource);
  if (!file) {
    if (!file.error().starts_with(kSource + ": ") || file.error().size() == kSource.size() + 2) {
      fail("an error names the source and the problem", file.error());
    }
    return;
  }
  // check refuses a file with any other document, so --fix writes back
  // only mappings (Kubernetes objects) and empty documents.
  for (const ManifestDocument& document : file.value().documents) {
    if (!document.object.is_object() && !document.object.is_null()) return;
  }
  const std::string written = write_manifests(file.value());
  Result<ManifestFile> again = read_manifests(written, kSource);
  if (!again) fail("what --fix writes reads back", again.error() + "\n--- written:\n" + written);
  std::vector<nlohmann::json> before;
  std::vector<nlohmann::json> after;
  for (const ManifestDocument& document : file.value().documents) {
    if (!document.object.is_null()) before.push_back(document.object);
  }
  for (const ManifestDocument& document : again.value().documents) {
    if (!document.object.is_null()) after.push_back(document.object);
  }
  if (before != after) {
    fail("what --fix writes reads back as the same documents",
         show(before) + "\n" + show(after) + "\n--- written:\n" + written);
  }
}

}  // namespace
}  // namespace gpusizer::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpusizer::fuzz::check_manifests(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
