// Base64 (RFC 4648, with padding): the JSON Patch of an AdmissionReview
// answer, and the certificate-authority-data and client-*-data of a
// kubeconfig.
#pragma once

#include <string>
#include <string_view>

#include "gpusizer/util/result.h"

namespace gpusizer {

std::string base64_encode(std::string_view bytes);

// Whitespace (line breaks in a wrapped value) is skipped. Fails, saying so,
// on any other character outside the alphabet or a length that is not a
// whole number of 4-character groups.
Result<std::string> base64_decode(std::string_view text);

}  // namespace gpusizer
