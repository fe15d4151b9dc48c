#include "gpusizer/check/check_inputs.h"

#include "gpusizer/check/manifests.h"
#include "gpusizer/check/osmo_workflow.h"
#include "gpusizer/json/json_access.h"
#include "gpusizer/json/json_view.h"
#include "gpusizer/nodes/claim_reader.h"
#include "gpusizer/util/strings.h"

namespace gpusizer {

using nlohmann::json;

std::string shown_path(const std::string& path) { return path == "-" ? "stdin" : path; }

namespace {

// Where a document holds other objects: a List's items; an OpenShift
// Template's objects, which `oc process` creates as written, its
// ${PARAMETERS} filled in (template.openshift.io, or v1 as OpenShift 3
// wrote it). nullptr: it is an object itself.
const char* objects_key(const json& document) {
  const std::string kind = string_member(document, "kind");
  if (kind == "List") return "items";
  const std::string api_version = string_member(document, "apiVersion");
  if (kind == "Template" && (api_version == "v1" || api_version.starts_with("template.openshift.io/"))) {
    return "objects";
  }
  return nullptr;
}

// Two levels at most: a List of Templates (oc get templates -o yaml).
void add_object_pointers(const json& document, const std::string& at, int depth, std::vector<std::string>& out) {
  const char* key = depth < 2 ? objects_key(document) : nullptr;
  if (!key || !member(document, key).is_array()) {
    out.push_back(at);
    return;
  }
  const json& objects = document[key];
  for (std::size_t n = 0; n < objects.size(); ++n) {
    add_object_pointers(objects[n], at + "/" + key + "/" + std::to_string(n), depth + 1, out);
  }
}

}  // namespace

std::vector<std::string> object_pointers(const json& document) {
  std::vector<std::string> pointers;
  add_object_pointers(document, "", 0, pointers);
  return pointers;
}

std::shared_ptr<const ClaimInventory> read_claim_objects(std::vector<CheckInput>& inputs, const InputLimits& limits,
                                                         std::vector<DraObject> known) {
  ClaimInventoryBuilder builder("the checked files");
  for (DraObject& object : known) builder.upsert(std::move(object));
  for (CheckInput& input : inputs) {
    const Result<std::string> text = input.text(limits);
    if (!text ||
        (text.value().find("resource.k8s.io") == std::string::npos &&
         text.value().find("resource.nvidia.com") == std::string::npos) ||
        is_osmo_workflow(text.value())) {
      continue;
    }
    auto file = read_manifests(text.value(), shown_path(input.path), limits);
    if (!file) continue;  // said when the file is checked
    for (const ManifestDocument& document : file.value().documents) {
      if (!document.object.is_object() || !input.dra_error.empty()) continue;
      for (const std::string& pointer : object_pointers(document.object)) {
        JsonReader reader;
        const JsonView object = reader.view_of(document.object.at(json::json_pointer(pointer)));
        auto read = read_dra_object(object);
        if (!read) {
          input.dra_error = shown_path(input.path) + ": document " + std::to_string(document.index + 1) + ", line " +
                            std::to_string(document.line) + " (" + std::string(object["kind"].string()) + " " +
                            printable(object["metadata"]["name"].string(), kQuotedBytes) + "): " + read.error();
          break;
        }
        if (read.value()) builder.upsert(std::move(*read.value()));
      }
    }
  }
  return builder.build();
}

}  // namespace gpusizer
