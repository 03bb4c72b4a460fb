#pragma once
// Whether LD_PRELOAD can reach a program at all, said before `txray run`/`txray enable` hand it over:
// otherwise a program the agent cannot enter runs, and nothing is ever recorded, with no word why.
#include <string>

namespace txray::cli {

// The program a command name runs: itself when it has a '/', else the first executable of that name on
// PATH (as execvp finds it); "" when there is none.
std::string resolve_program(const std::string& name);

// "" when the agent can be preloaded into the program at `path` (or when it is not an ELF file this
// can read: a script's interpreter is what runs); else one sentence of why not, e.g. "it is statically
// linked (no dynamic loader), so LD_PRELOAD cannot load the agent into it".
std::string why_not_traceable(const std::string& path);

}  // namespace txray::cli
