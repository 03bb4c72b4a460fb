#include "symbolize/symbolizer.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace txray::sym {
namespace {

constexpr size_t kMaxFunctionName = 512;

// A read-only mapping of a whole file.
struct Mapped {
  const uint8_t* data = nullptr;
  size_t size = 0;
  ~Mapped() {
    if (data) munmap(const_cast<uint8_t*>(data), size);
  }
  bool open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= off_t(sizeof(Elf64_Ehdr));
    if (ok) {
      void* p = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data = static_cast<const uint8_t*>(p);
        size = size_t(st.st_size);
      }
    }
    ::close(fd);
    return data != nullptr;
  }
};

struct Symbol {
  uint64_t addr;
  uint64_t size;
  const char* name;  // inside the mapped file's string table (NUL-terminated: checked when loaded)
};

// The parts of one ELF file this needs, every offset checked against the file's size.
class ElfFile {
 public:
  bool open(const std::string& path) {
    if (!map_.open(path)) return false;
    if (map_.size < sizeof(Elf64_Ehdr)) return false;
    eh_ = reinterpret_cast<const Elf64_Ehdr*>(map_.data);
    if (std::memcmp(eh_->e_ident, ELFMAG, SELFMAG) != 0 || eh_->e_ident[EI_CLASS] != ELFCLASS64) return false;
    if (eh_->e_shentsize != sizeof(Elf64_Shdr) || !in(eh_->e_shoff, uint64_t(eh_->e_shnum) * sizeof(Elf64_Shdr)))
      return false;
    sh_ = reinterpret_cast<const Elf64_Shdr*>(map_.data + eh_->e_shoff);
    return true;
  }

  const Elf64_Shdr* section(uint32_t type) const {
    for (int i = 0; i < eh_->e_shnum; ++i)
      if (sh_[i].sh_type == type) return &sh_[i];
    return nullptr;
  }
  const Elf64_Shdr* section_named(std::string_view want) const {
    if (eh_->e_shstrndx >= eh_->e_shnum) return nullptr;
    const Elf64_Shdr& names = sh_[eh_->e_shstrndx];
    if (!in(names.sh_offset, names.sh_size)) return nullptr;
    for (int i = 0; i < eh_->e_shnum; ++i) {
      uint64_t at = sh_[i].sh_name;
      if (at >= names.sh_size) continue;
      const char* n = reinterpret_cast<const char*>(map_.data + names.sh_offset + at);
      size_t room = names.sh_size - at;
      if (strnlen(n, room) < room && want == n) return &sh_[i];
    }
    return nullptr;
  }

  // Function symbols of a SHT_SYMTAB or SHT_DYNSYM section, appended to out.
  void functions(const Elf64_Shdr* tab, std::vector<Symbol>& out) const {
    if (!tab || tab->sh_entsize != sizeof(Elf64_Sym) || !in(tab->sh_offset, tab->sh_size)) return;
    if (tab->sh_link >= eh_->e_shnum) return;
    const Elf64_Shdr& str = sh_[tab->sh_link];
    if (!in(str.sh_offset, str.sh_size) || str.sh_size == 0) return;
    const char* strings = reinterpret_cast<const char*>(map_.data + str.sh_offset);
    if (strings[str.sh_size - 1] != '\0') return;  // every name below ends inside the table
    auto* syms = reinterpret_cast<const Elf64_Sym*>(map_.data + tab->sh_offset);
    size_t n = tab->sh_size / sizeof(Elf64_Sym);
    for (size_t i = 0; i < n; ++i) {
      const Elf64_Sym& s = syms[i];
      int type = ELF64_ST_TYPE(s.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || !s.st_value) continue;
      if (s.st_name >= str.sh_size || !strings[s.st_name]) continue;
      out.push_back(Symbol{s.st_value, s.st_size, strings + s.st_name});
    }
  }

  // The GNU build id (hex), from the .note.gnu.build-id section; "" when none.
  std::string build_id() const {
    const Elf64_Shdr* s = section_named(".note.gnu.build-id");
    if (!s || s->sh_type != SHT_NOTE || !in(s->sh_offset, s->sh_size)) return {};
    return note_build_id(map_.data + s->sh_offset, s->sh_size);
  }

  // The file name a .gnu_debuglink section gives; "" when none.
  std::string debuglink() const {
    const Elf64_Shdr* s = section_named(".gnu_debuglink");
    if (!s || !in(s->sh_offset, s->sh_size) || s->sh_size < 2) return {};
    const char* p = reinterpret_cast<const char*>(map_.data + s->sh_offset);
    size_t n = strnlen(p, s->sh_size);
    return n < s->sh_size ? std::string(p, n) : std::string();
  }

  static std::string note_build_id(const uint8_t* p, size_t size) {
    size_t at = 0;
    while (at + sizeof(Elf64_Nhdr) <= size) {
      auto* nh = reinterpret_cast<const Elf64_Nhdr*>(p + at);
      size_t name_at = at + sizeof(Elf64_Nhdr);
      size_t desc_at = name_at + ((nh->n_namesz + 3) & ~size_t(3));
      size_t next = desc_at + ((nh->n_descsz + 3) & ~size_t(3));
      if (next > size || desc_at > size) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(p + name_at, "GNU", 4) == 0) {
        static const char kHex[] = "0123456789abcdef";
        std::string hex;
        for (size_t i = 0; i < nh->n_descsz; ++i) {
          hex += kHex[p[desc_at + i] >> 4];
          hex += kHex[p[desc_at + i] & 15];
        }
        return hex;
      }
      at = next;
    }
    return {};
  }

 private:
  bool in(uint64_t off, uint64_t len) const { return off <= map_.size && len <= map_.size - off; }
  Mapped map_;
  const Elf64_Ehdr* eh_ = nullptr;
  const Elf64_Shdr* sh_ = nullptr;
};

// The function symbols of one loaded file (and of its debug file), sorted; names demangled on demand.
struct SymbolTable {
  std::vector<std::unique_ptr<ElfFile>> files;  // kept mapped: symbols point into their string tables
  std::vector<Symbol> syms;
  std::unordered_map<uint64_t, std::string> demangled;  // by symbol address

  void load(const std::string& path, const std::string& loaded_build_id) {
    auto main = std::make_unique<ElfFile>();
    if (!main->open(path)) return;
    std::string file_id = main->build_id();
    // Replaced on disk since it was loaded: its symbols would name the wrong functions.
    if (!loaded_build_id.empty() && !file_id.empty() && file_id != loaded_build_id) return;
    std::string id = loaded_build_id.empty() ? file_id : loaded_build_id;
    const Elf64_Shdr* symtab = main->section(SHT_SYMTAB);
    main->functions(symtab, syms);
    main->functions(main->section(SHT_DYNSYM), syms);
    if (!symtab) {
      std::vector<std::string> candidates;
      if (id.size() > 2) candidates.push_back("/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug");
      if (std::string link = main->debuglink(); !link.empty()) {
        std::string dir = path.substr(0, path.rfind('/') + 1);
        candidates.push_back("/usr/lib/debug" + dir + link);
        candidates.push_back(dir + ".debug/" + link);
      }
      for (const auto& c : candidates) {
        auto dbg = std::make_unique<ElfFile>();
        if (!dbg->open(c)) continue;
        std::string dbg_id = dbg->build_id();
        if (!id.empty() && !dbg_id.empty() && dbg_id != id) continue;
        size_t before = syms.size();
        dbg->functions(dbg->section(SHT_SYMTAB), syms);
        if (syms.size() == before) continue;
        files.push_back(std::move(dbg));
        break;
      }
    }
    files.push_back(std::move(main));
    // By address; at one address the sized symbol first (an alias without a size says less).
    std::sort(syms.begin(), syms.end(), [](const Symbol& a, const Symbol& b) {
      return a.addr != b.addr ? a.addr < b.addr : a.size > b.size;
    });
  }

  // The function containing vaddr, demangled; "" when none.
  const std::string* lookup(uint64_t vaddr) {
    auto it = std::upper_bound(syms.begin(), syms.end(), vaddr, [](uint64_t v, const Symbol& s) { return v < s.addr; });
    if (it == syms.begin()) return nullptr;
    --it;
    // Step back over aliases at the same address to the sized one (sorted first).
    while (it != syms.begin() && (it - 1)->addr == it->addr) --it;
    if (it->size && vaddr >= it->addr + it->size) return nullptr;  // in a gap: a stripped local function
    auto [pos, fresh] = demangled.try_emplace(it->addr);
    if (fresh) pos->second = demangle(it->name);
    return &pos->second;
  }

  static std::string demangle(const char* name) {
    std::string out;
    if (name[0] == '_' && name[1] == 'Z') {
      int status = 0;
      char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
      if (d && status == 0) out = d;
      std::free(d);
    }
    if (out.empty()) out = name;
    if (out.size() > kMaxFunctionName) out.resize(kMaxFunctionName);
    return out;
  }
};

struct Module {
  std::string path;
  std::string name;      // basename
  std::string build_id;  // of the loaded image (its PT_NOTE in memory)
  uintptr_t bias = 0;    // dlpi_addr
  std::shared_ptr<SymbolTable> table;  // loaded at its first lookup
};

struct Segment {
  uintptr_t lo, hi;
  size_t module;
};

struct Snapshot {
  std::vector<Module> modules;
  std::vector<Segment> segments;  // sorted by lo
};

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

int add_module(dl_phdr_info* info, size_t, void* arg) {
  auto* snap = static_cast<Snapshot*>(arg);
  Module m;
  m.bias = info->dlpi_addr;
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  if (!*name && snap->modules.empty()) m.path = self_exe();  // the main program comes first, unnamed
  else m.path = name;
  if (m.path.empty()) return 0;  // nothing to read symbols from
  if (m.path.find("linux-vdso") != std::string::npos) m.name = "[vdso]";
  else m.name = m.path.substr(m.path.rfind('/') + 1);
  size_t idx = snap->modules.size();
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && ph.p_memsz)
      snap->segments.push_back(Segment{info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz, idx});
    if (ph.p_type == PT_NOTE && m.build_id.empty() && ph.p_memsz < (1u << 16))
      m.build_id = ElfFile::note_build_id(reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr), ph.p_memsz);
  }
  snap->modules.push_back(std::move(m));
  return 0;
}

struct LoaderCounts {
  unsigned long long adds = 0, subs = 0;
};

int read_counts(dl_phdr_info* info, size_t size, void* arg) {
  auto* c = static_cast<LoaderCounts*>(arg);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1;  // the first object is enough
}

}  // namespace

struct Symbolizer::Impl {
  Snapshot snap;
  LoaderCounts counts{~0ull, ~0ull};
  // Symbol tables by path + build id: a library unloaded and loaded again keeps its table.
  std::map<std::string, std::shared_ptr<SymbolTable>> tables;

  void refresh_if_changed() {
    LoaderCounts now;
    dl_iterate_phdr(read_counts, &now);
    if (now.adds == counts.adds && now.subs == counts.subs && !snap.modules.empty()) return;
    counts = now;
    snap = Snapshot{};
    dl_iterate_phdr(add_module, &snap);
    std::sort(snap.segments.begin(), snap.segments.end(), [](const Segment& a, const Segment& b) { return a.lo < b.lo; });
  }

  Module* module_of(uintptr_t ip) {
    auto& seg = snap.segments;
    auto it = std::upper_bound(seg.begin(), seg.end(), ip, [](uintptr_t v, const Segment& s) { return v < s.lo; });
    if (it == seg.begin()) return nullptr;
    --it;
    return ip < it->hi ? &snap.modules[it->module] : nullptr;
  }

  SymbolTable& table_of(Module& m) {
    if (!m.table) {
      auto& t = tables[m.path + "\n" + m.build_id];
      if (!t) {
        t = std::make_shared<SymbolTable>();
        if (m.name != "[vdso]") t->load(m.path, m.build_id);
      }
      m.table = t;
    }
    return *m.table;
  }
};

Symbolizer::Symbolizer() : impl_(std::make_unique<Impl>()) {}
Symbolizer::~Symbolizer() = default;

Frame Symbolizer::resolve(uintptr_t ip, bool return_address) {
  Frame f;
  impl_->refresh_if_changed();
  Module* m = impl_->module_of(ip);
  if (!m) {
    f.module = "?";
    f.offset = ip;
    return f;
  }
  f.module = m->name;
  f.offset = ip - m->bias;
  uint64_t look = f.offset - (return_address && f.offset ? 1 : 0);
  if (const std::string* fn = impl_->table_of(*m).lookup(look)) f.function = *fn;
  return f;
}

size_t Symbolizer::modules_loaded() const { return impl_->tables.size(); }

std::string format(const Frame& f) {
  char off[32];
  std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(f.offset));
  if (f.function.empty()) return f.module + off;
  return f.function + " (" + f.module + off + ")";
}

}  // namespace txray::sym
