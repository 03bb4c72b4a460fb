// Symbolizer: addresses of this process -> `function (module+0xoff)`. Off the hot path only (the agent's
// transport thread): it reads files, allocates and demangles. Captured stacks (agent/core/
// stack_capture.h) and CPU samples come here as raw addresses.
//
// How: the modules of the process from dl_iterate_phdr (re-read when the loader's count of loaded or
// unloaded objects moved, so libraries dlopen()ed later are found); per module, once, the ELF file
// mmap()ed read-only and its function symbols (.symtab, else .dynsym) sorted by address; when the file
// has no .symtab, a separate debug file under /usr/lib/debug (by build id: .build-id/xx/yyyy.debug, then
// by .gnu_debuglink) gives it. A file whose build id differs from the loaded image's (replaced on disk
// since) gives no names. C++ names are demangled with the C++ runtime's abi::__cxa_demangle (the agent
// links libstdc++ statically, so that is no new dependency). Each resolved address is cached per module.
//
// No libelf/libdw: the two tables needed are a few dozen lines of <elf.h>, and libdw would be one more
// shared library inside every traced process.
//
// Not thread-safe: one Symbolizer per thread (the transport thread owns the agent's).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace txray::sym {

struct Frame {
  std::string function;  // demangled; empty when unknown (stripped, JIT code, no file)
  std::string module;    // basename of the ELF file ("libc.so.6"), "[vdso]", or "?" when unmapped
  uint64_t offset = 0;   // the address in the module's own numbering (ip - load bias): addr2line -e FILE
};

// "function (module+0xoff)", or "module+0xoff" when the function is unknown.
std::string format(const Frame& f);

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // One address of this process. `return_address`: ip is where a call returns to (every frame of a
  // captured stack; for a sampled program counter pass false): its function is looked up at ip - 1, so
  // a call that is the last instruction of a function is not given to the next one. Frame.offset is ip's.
  Frame resolve(uintptr_t ip, bool return_address = true);

  // Modules and symbol tables loaded so far (for tests and status).
  size_t modules_loaded() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace txray::sym
