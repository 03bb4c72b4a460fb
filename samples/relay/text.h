// The back-end's document: deterministic English-like text (same bytes on every run and machine), so
// that tests can compare what reaches the client byte for byte.
#pragma once

#include <cstddef>
#include <string>

namespace txray::samples::relay {

// About `bytes` bytes (exactly `bytes` bytes, cut at the end) of words, sentences and lines.
std::string make_text(size_t bytes);

// The relay's page around a text: a little HTML with a word count. The client strips it with
// page_text() and gets the back-end's text back.
std::string make_page(const std::string& text);
// The text inside a page made by make_page(); throws std::runtime_error when `page` is not one.
std::string page_text(const std::string& page);

}  // namespace txray::samples::relay
