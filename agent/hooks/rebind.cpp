#include "hooks/rebind.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace txray::hooks {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
#else
constexpr uint32_t kJumpSlot = 0;  // not done on other machines
#endif

struct Export {
  std::string_view name;
  ElfW(Addr) addr;
  bool operator<(const Export& o) const { return name < o.name; }
};

struct Dyn {
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* jmprel = nullptr;
  size_t jmprel_size = 0;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;
  bool rela = true;
};

// The loader has relocated most d_ptr values in place; those still below the load base are offsets.
ElfW(Addr) fix(const dl_phdr_info* info, ElfW(Addr) a) { return a < info->dlpi_addr ? a + info->dlpi_addr : a; }

bool read_dyn(const dl_phdr_info* info, Dyn* d) {
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return false;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
      case DT_SYMTAB: d->symtab = reinterpret_cast<const ElfW(Sym)*>(fix(info, dyn->d_un.d_ptr)); break;
      case DT_STRTAB: d->strtab = reinterpret_cast<const char*>(fix(info, dyn->d_un.d_ptr)); break;
      case DT_JMPREL: d->jmprel = reinterpret_cast<const ElfW(Rela)*>(fix(info, dyn->d_un.d_ptr)); break;
      case DT_PLTRELSZ: d->jmprel_size = dyn->d_un.d_val; break;
      case DT_PLTREL: d->rela = dyn->d_un.d_val == DT_RELA; break;
      case DT_GNU_HASH: d->gnu_hash = reinterpret_cast<const uint32_t*>(fix(info, dyn->d_un.d_ptr)); break;
      case DT_HASH: d->sysv_hash = reinterpret_cast<const uint32_t*>(fix(info, dyn->d_un.d_ptr)); break;
      default: break;
    }
  }
  return d->symtab && d->strtab;
}

// How many symbols the dynamic symbol table holds (from its hash table: ELF has no count of its own).
size_t symbol_count(const Dyn& d) {
  if (d.sysv_hash) return d.sysv_hash[1];
  if (!d.gnu_hash) return 0;
  uint32_t nbuckets = d.gnu_hash[0], symoffset = d.gnu_hash[1], bloom_size = d.gnu_hash[2];
  const uint32_t* buckets = d.gnu_hash + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
  const uint32_t* chain = buckets + nbuckets;
  uint32_t last = 0;
  for (uint32_t i = 0; i < nbuckets; ++i) last = std::max(last, buckets[i]);
  if (last < symoffset) return symoffset;
  while (!(chain[last - symoffset] & 1)) ++last;
  return last + 1;
}

bool skipped(const char* name) {
  std::string_view n = name ? name : "";
  for (std::string_view s : {"/ld-linux", "linux-vdso", "linux-gate", "/libc.so", "/libpthread.so", "/libdl.so",
                             "/libasan", "/libtsan", "/libubsan", "libclang_rt"})
    if (n.find(s) != std::string_view::npos) return true;
  return false;
}

struct Pass {
  ElfW(Addr) self_base = 0;
  std::vector<Export>* exports = nullptr;
  long page = 4096;
};

std::vector<Export>* g_exports = nullptr;  // the agent's exported functions, sorted by name (made once)

void collect_exports(const dl_phdr_info* info) {
  Dyn d;
  if (!read_dyn(info, &d)) return;
  auto* v = new (std::nothrow) std::vector<Export>;
  if (!v) return;
  size_t n = symbol_count(d);
  for (size_t i = 1; i < n; ++i) {
    const ElfW(Sym)& s = d.symtab[i];
    if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) != STT_FUNC) continue;
    unsigned bind = ELF64_ST_BIND(s.st_info);
    if (bind != STB_GLOBAL && bind != STB_WEAK) continue;
    v->push_back({d.strtab + s.st_name, info->dlpi_addr + s.st_value});
  }
  std::sort(v->begin(), v->end());
  g_exports = v;
}

void patch_object(const dl_phdr_info* info, const Pass& p) {
  Dyn d;
  if (!read_dyn(info, &d) || !d.jmprel || !d.rela) return;
  ElfW(Addr) relro_lo = 0, relro_hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
      relro_lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      relro_hi = relro_lo + info->dlpi_phdr[i].p_memsz;
    }
  size_t n = d.jmprel_size / sizeof(ElfW(Rela));
  for (size_t i = 0; i < n; ++i) {
    const ElfW(Rela)& r = d.jmprel[i];
    if (ELF64_R_TYPE(r.r_info) != kJumpSlot) continue;
    const ElfW(Sym)& s = d.symtab[ELF64_R_SYM(r.r_info)];
    if (s.st_shndx != SHN_UNDEF) continue;  // the object's own definition: not imported
    Export key{d.strtab + s.st_name, 0};
    auto it = std::lower_bound(p.exports->begin(), p.exports->end(), key);
    if (it == p.exports->end() || it->name != key.name) continue;
    auto* slot = reinterpret_cast<ElfW(Addr)*>(info->dlpi_addr + r.r_offset);
    if (__atomic_load_n(slot, __ATOMIC_RELAXED) == it->addr) continue;
    auto at = reinterpret_cast<ElfW(Addr)>(slot);
    bool ro = at >= relro_lo && at < relro_hi;
    void* pg = reinterpret_cast<void*>(at & ~ElfW(Addr)(p.page - 1));
    if (ro && mprotect(pg, size_t(p.page), PROT_READ | PROT_WRITE) != 0) continue;
    __atomic_store_n(slot, it->addr, __ATOMIC_RELAXED);
    if (ro) mprotect(pg, size_t(p.page), PROT_READ);
  }
}

std::atomic<bool> g_busy{false};
std::atomic<unsigned long long> g_seen_adds{0};

int adds_cb(dl_phdr_info* info, size_t, void* out) {
  *static_cast<unsigned long long*>(out) = info->dlpi_adds;
  return 1;
}

}  // namespace

void rebind() {
  if (kJumpSlot == 0) return;
  unsigned long long adds = 0;
  dl_iterate_phdr(adds_cb, &adds);
  if (adds == g_seen_adds.load(std::memory_order_relaxed)) return;
  if (g_busy.exchange(true, std::memory_order_acquire)) return;
  int saved = errno;
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&rebind), &self) && self.dli_fbase) {
    Pass p;
    p.self_base = reinterpret_cast<ElfW(Addr)>(self.dli_fbase);
    long pg = sysconf(_SC_PAGESIZE);
    p.page = pg > 0 ? pg : 4096;
    if (!g_exports)
      dl_iterate_phdr(
          [](dl_phdr_info* info, size_t, void* arg) {
            if (info->dlpi_addr == static_cast<Pass*>(arg)->self_base) collect_exports(info);
            return 0;
          },
          &p);
    p.exports = g_exports;
    if (p.exports && !p.exports->empty())
      dl_iterate_phdr(
          [](dl_phdr_info* info, size_t, void* arg) {
            auto* pass = static_cast<Pass*>(arg);
            if (info->dlpi_addr != pass->self_base && !skipped(info->dlpi_name)) patch_object(info, *pass);
            return 0;
          },
          &p);
  }
  g_seen_adds.store(adds, std::memory_order_relaxed);
  g_busy.store(false, std::memory_order_release);
  errno = saved;
}

}  // namespace txray::hooks
