// Every file the project reads or writes goes through here, so the limits of common/limits.h hold for
// all of them: a size cap (endless devices end with an error), a JSON nesting cap checked on the text
// before parsing, and every parser exception turned into a Status that names the file.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/limits.h"
#include "common/status.h"

namespace ios {

// The whole file; an error if it cannot be opened or holds more than `max_bytes`.
Expected<std::string> read_file(const std::string& path, size_t max_bytes = limits::kMaxFileBytes);

// Parses JSON text; errors name `source_name`, the line and column, or the nesting limit.
Expected<nlohmann::json> parse_json_text(const std::string& text, const std::string& source_name);
Expected<nlohmann::json> read_json_file(const std::string& path);

// Writes the whole text and reports any failure, including one that only shows when the data is flushed.
Status write_text_file(const std::string& path, const std::string& text);

}  // namespace ios
