// What `check` reads of each input at most: the manifest files, stdin, OSMO
// workflow files and the --nodes file.
#pragma once

#include <cstddef>
#include <string>

#include "gpusizer/util/files.h"
#include "gpusizer/util/result.h"
#include "gpusizer/util/yaml_load.h"

namespace gpusizer {

// The flags that raise InputLimits, as errors name them.
inline constexpr const char* kMaxFileBytesFlag = "--max-file-bytes";
inline constexpr const char* kMaxDocumentsFlag = "--max-documents";
inline constexpr const char* kMaxYamlNodesFlag = "--max-yaml-nodes";

// The most `check` reads of one input (a manifest file, stdin, an OSMO
// workflow file, the --nodes file), each raised by its flag; past one, the
// input is unreadable (exit 2). docs/security.md ("Bounds") says why each
// default is what it is.
struct InputLimits {
  std::size_t max_file_bytes = kMaxFileBytes;  // --max-file-bytes
  std::size_t max_documents = 10'000;          // --max-documents: YAML documents in one file
  // --max-yaml-nodes: what one file's YAML (or JSON) expands to, an alias
  // counting as every node it repeats (yaml_load.h).
  std::size_t max_yaml_nodes = 2'000'000;

  // The bounds of one file's YAML: max_yaml_nodes, and kMaxManifestDepth.
  YamlBounds yaml_bounds() const;
};

// How deeply a manifest's mappings and lists may nest, aliases expanded.
// Fixed: yaml-cpp's parser stops at 500 levels with a terse "bad file", and
// no manifest comes near (the deepest in the corpus nests 15).
inline constexpr std::size_t kMaxManifestDepth = 400;

// The text of the file at path, or of stdin for "-", failing past
// limits.max_file_bytes ("big.yaml: larger than 67108864 bytes
// (--max-file-bytes)"). A FIFO, a device or stdin is read no further than
// that, so /dev/zero costs the limit, not all memory.
Result<std::string> read_input(const std::string& path, const InputLimits& limits);

}  // namespace gpusizer
