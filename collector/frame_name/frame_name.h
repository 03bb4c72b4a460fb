#pragma once
// Readable names of stack frames. The agent sends (and the store keeps) each frame's full demangled
// name; what a person reads - the report, `txray show`, the viewer's stacks, hot functions and flame
// graph - is this short form, with the full one kept for JSON and tooltips. Pure: no I/O, no Qt, so
// the collector's readers and the viewer share it.
#include <string>
#include <string_view>

namespace txray::names {

// The standard library's long spellings shortened (`std::__cxx11::basic_string<char, ...>` ->
// `std::string`), then every template argument list collapsed to `<…>` and every non-empty parameter
// list to `(…)`: "txray::samples::HttpReader::read_body(std::map<…> const&)" ->
// "txray::samples::HttpReader::read_body(…)". Qualifiers after the parameters (" const",
// " [clone .cold]"), "(anonymous namespace)" and operator names are kept. A name that is not a C++
// demangled name (a C symbol, "[libc.so.6]", "handler (app.py:12)") comes back unchanged.
std::string short_frame_name(std::string_view full);

// Only the standard library's long spellings shortened (nothing collapsed).
std::string std_spellings_shortened(std::string_view full);

}  // namespace txray::names
