#include "traceable.h"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace txray::cli {
namespace {

struct ElfFacts {
  bool elf = false;
  bool interp = false;     // has PT_INTERP: the dynamic loader runs first and reads LD_PRELOAD
  bool go = false;         // a Go program: its runtime makes system calls itself, not through libc
};

template <typename Ehdr, typename Phdr, typename Shdr, typename Sym>
ElfFacts read_elf(const std::string& data) {
  ElfFacts f;
  f.elf = true;
  if (data.size() < sizeof(Ehdr)) return f;
  Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof eh);
  for (size_t i = 0; i < eh.e_phnum; ++i) {
    const size_t at = eh.e_phoff + i * sizeof(Phdr);
    if (eh.e_phentsize != sizeof(Phdr) || at + sizeof(Phdr) > data.size()) break;
    Phdr ph;
    std::memcpy(&ph, data.data() + at, sizeof ph);
    if (ph.p_type == PT_INTERP) f.interp = true;
  }
  if (eh.e_shentsize != sizeof(Shdr) || eh.e_shoff + size_t(eh.e_shnum) * sizeof(Shdr) > data.size()) return f;
  std::vector<Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), data.data() + eh.e_shoff, sh.size() * sizeof(Shdr));
  auto name_at = [&](const Shdr& strtab, size_t off) -> std::string {
    const size_t at = strtab.sh_offset + off;
    if (strtab.sh_type == SHT_NOBITS || at >= data.size()) return {};
    return std::string(data.c_str() + at, strnlen(data.c_str() + at, data.size() - at));
  };
  if (eh.e_shstrndx < sh.size()) {
    for (const auto& s : sh)
      if (name_at(sh[eh.e_shstrndx], s.sh_name) == ".go.buildinfo") f.go = true;
  }
  for (const auto& s : sh) {  // an unstripped Go program without the build-info section (old toolchains)
    if (f.go) break;
    if (s.sh_type != SHT_SYMTAB || s.sh_link >= sh.size() || s.sh_entsize != sizeof(Sym)) continue;
    if (s.sh_offset + s.sh_size > data.size()) continue;
    for (size_t at = s.sh_offset; at + sizeof(Sym) <= s.sh_offset + s.sh_size; at += sizeof(Sym)) {
      Sym sym;
      std::memcpy(&sym, data.data() + at, sizeof sym);
      if (name_at(sh[s.sh_link], sym.st_name) == "runtime.main") {
        f.go = true;
        break;
      }
    }
  }
  return f;
}

ElfFacts elf_facts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < EI_NIDENT || std::memcmp(data.data(), ELFMAG, SELFMAG) != 0) return {};
  if (data[EI_CLASS] == ELFCLASS64) return read_elf<Elf64_Ehdr, Elf64_Phdr, Elf64_Shdr, Elf64_Sym>(data);
  if (data[EI_CLASS] == ELFCLASS32) return read_elf<Elf32_Ehdr, Elf32_Phdr, Elf32_Shdr, Elf32_Sym>(data);
  return {};
}

}  // namespace

std::string resolve_program(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(at, end - at);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    at = end + 1;
  }
  return {};
}

std::string why_not_traceable(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  // The loader runs a set-uid/set-gid program in secure mode, which ignores LD_PRELOAD, when the exec
  // changes who the program runs as: root running its own set-uid-root file stays traceable.
  if ((st.st_mode & S_ISUID) && st.st_uid != ::geteuid())
    return "it is set-uid (owner uid " + std::to_string(st.st_uid) +
           "), and the dynamic loader ignores LD_PRELOAD for set-uid programs";
  if ((st.st_mode & S_ISGID) && st.st_gid != ::getegid())
    return "it is set-gid (group gid " + std::to_string(st.st_gid) +
           "), and the dynamic loader ignores LD_PRELOAD for set-gid programs";
  const ElfFacts f = elf_facts(path);
  if (!f.elf) return {};
  if (f.go)
    return "it is a Go program: Go makes its system calls directly, not through libc, so the agent sees "
           "none of its sockets even when it is loaded";
  if (!f.interp) return "it is statically linked (no dynamic loader), so LD_PRELOAD cannot load the agent into it";
  return {};
}

}  // namespace txray::cli
