// Text checks every test program shares, defined once: the support
// namespaces bring them in with a using-declaration, so that two of them
// opened in one file (or one unity batch) name the same function.
#pragma once

#include <string>

namespace gpusizer::testing {

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace gpusizer::testing
