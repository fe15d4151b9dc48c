// Manifest files as people write them: multi-document YAML (or JSON), read
// into JSON for the decision engine, and written back with a patch applied
// keeping every other field and its order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "gpusizer/check/input_limits.h"
#include "gpusizer/util/result.h"

namespace gpusizer {

struct ManifestDocument {
  std::size_t index = 0;  // 0-based position in the file
  int line = 1;           // 1-based line where the document starts
  YAML::Node node;        // as written (key order kept), for --fix
  nlohmann::json object;  // the same data as JSON; null for an empty document
};

struct ManifestFile {
  std::string source;                    // path, or "stdin"
  bool json = false;                     // a JSON file: one document, written back as JSON
  nlohmann::ordered_json json_document;  // for JSON files: as written (key order, number forms)
  std::vector<ManifestDocument> documents;
};

// Parses a YAML stream (JSON is read as YAML). Plain scalars become numbers,
// booleans or null as YAML 1.2's core schema says; quoted scalars stay
// strings. Fails naming the source, the document (counted from 1) and the
// line, and past a limit naming it and its flag ("x.yaml: more than 10000
// documents (--max-documents)").
Result<ManifestFile> read_manifests(std::string_view text, const std::string& source, const InputLimits& limits = {});

// A YAML node's value as read_manifests types it.
nlohmann::json yaml_value(const YAML::Node& node);

// Applies JSON Patch `add` and `replace` operations (as the webhook
// produces them) to one document, in the file's own form (its YAML tree,
// or its JSON), and to its JSON object. In YAML, a value replaced keeps
// every node whose value it does not change as written; values added are
// written quoted, as strings. Fails naming the operation that does not
// apply. (src/check/manifest_writer.cpp)
Result<bool> apply_patch(ManifestFile& file, std::size_t document, const nlohmann::json& operations);

// The file with every document's node, in the file's own format (YAML
// documents separated by `---`, or JSON). Comments are not kept: yaml-cpp
// does not read them.
std::string write_manifests(const ManifestFile& file);

}  // namespace gpusizer
