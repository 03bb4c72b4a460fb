#include "cpu/perf_unwind.h"

#include <dlfcn.h>
#include <link.h>
#include <libunwind.h>  // the generic (remote) interface: types only, the functions are dlsym()ed

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "cpu/stack_capture.h"

namespace txray::cpu::perfu {
namespace {

using CreateFn = unw_addr_space_t (*)(unw_accessors_t*, int);
using CachingFn = int (*)(unw_addr_space_t, unw_caching_policy_t);
using FlushFn = void (*)(unw_addr_space_t, unw_word_t, unw_word_t);
using InitRemoteFn = int (*)(unw_cursor_t*, unw_addr_space_t, void*);
using GetRegFn = int (*)(unw_cursor_t*, unw_regnum_t, unw_word_t*);
using StepFn = int (*)(unw_cursor_t*);
using SearchFn = int (*)(unw_addr_space_t, unw_word_t, unw_dyn_info_t*, unw_proc_info_t*, int, void*);

CreateFn g_create = nullptr;
CachingFn g_caching = nullptr;
FlushFn g_flush = nullptr;
InitRemoteFn g_init_remote = nullptr;
GetRegFn g_get_reg = nullptr;
StepFn g_step = nullptr;
SearchFn g_search = nullptr;
unw_addr_space_t g_as = nullptr;

// A loaded module: where its code is and its .eh_frame_hdr search table.
struct Module {
  uintptr_t lo = 0, hi = 0;  // its executable segments' span
  uintptr_t hdr = 0;         // .eh_frame_hdr, 0: none usable
  uintptr_t table = 0;       // the binary search table in it
  uint64_t fde_count = 0;
};
struct Segment {
  uintptr_t lo = 0, hi = 0;  // a PT_LOAD segment as mapped: read in place by access_mem
};
std::vector<Module> g_modules;
std::vector<Segment> g_segments;
unsigned long long g_loader_count = ~0ull;  // adds + subs when the tables were made

// Bytes of a DWARF pointer encoding's value (the low nibble), 0 when not one of the fixed sizes.
int encoded_size(uint8_t enc) {
  switch (enc & 0x0f) {
    case 0x02: case 0x0a: return 2;
    case 0x03: case 0x0b: return 4;
    case 0x04: case 0x0c: return 8;
    default: return 0;
  }
}

void parse_hdr(Module& m) {
  auto* h = reinterpret_cast<const uint8_t*>(m.hdr);
  // version 1; eh_frame_ptr (skipped), fde_count (a plain number), then the table (datarel, sdata4 pairs).
  int ptr_size = encoded_size(h[1]), count_size = encoded_size(h[2]);
  if (h[0] != 1 || !ptr_size || h[2] == 0xff || !count_size || (h[2] & 0x70) != 0 || h[3] != 0x3b) {
    m.hdr = 0;
    return;
  }
  const uint8_t* p = h + 4 + ptr_size;
  uint64_t n = 0;
  if (count_size == 2) n = *reinterpret_cast<const uint16_t*>(p);
  else if (count_size == 4) n = *reinterpret_cast<const uint32_t*>(p);
  else n = *reinterpret_cast<const uint64_t*>(p);
  m.fde_count = n;
  m.table = reinterpret_cast<uintptr_t>(p + count_size);
}

int collect(dl_phdr_info* info, size_t, void*) {
  Module m;
  m.lo = UINTPTR_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      if (ph.p_flags & PF_R) g_segments.push_back({start, start + ph.p_memsz});
      if (ph.p_flags & PF_X) {
        m.lo = std::min(m.lo, start);
        m.hi = std::max(m.hi, start + uintptr_t(ph.p_memsz));
      }
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      m.hdr = start;
    }
  }
  if (m.lo < m.hi) {
    if (m.hdr) parse_hdr(m);
    g_modules.push_back(m);
  }
  return 0;
}

unsigned long long loader_count() {
  unsigned long long n = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* p) -> int {
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
          *static_cast<unsigned long long*>(p) = info->dlpi_adds + info->dlpi_subs;
        return 1;  // the counts are in the first entry
      },
      &n);
  return n;
}

bool readable(uintptr_t a, size_t n) {
  auto it = std::upper_bound(g_segments.begin(), g_segments.end(), a,
                             [](uintptr_t v, const Segment& s) { return v < s.lo; });
  if (it == g_segments.begin()) return false;
  --it;
  return a >= it->lo && a + n <= it->hi && a + n > a;
}

const Module* module_of(uintptr_t ip) {
  auto it = std::upper_bound(g_modules.begin(), g_modules.end(), ip,
                             [](uintptr_t v, const Module& m) { return v < m.lo; });
  if (it == g_modules.begin()) return nullptr;
  --it;
  return ip < it->hi ? &*it : nullptr;
}

struct Sample {
  const uint64_t* regs;
  const uint8_t* stack;
  uint64_t sp;
  uint64_t size;
};

int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t* pi, int need, void* arg) {
  const Module* m = module_of(ip);
  if (!m || !m->hdr || !m->fde_count) return -UNW_ENOINFO;
  unw_dyn_info_t di{};
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.start_ip = m->lo;
  di.end_ip = m->hi;
  di.u.rti.segbase = m->hdr;  // the table's offsets are relative to .eh_frame_hdr
  di.u.rti.table_data = m->table;
  di.u.rti.table_len = m->fde_count * 8 / sizeof(unw_word_t);  // pairs of int32_t
  return g_search(as, ip, &di, pi, need, arg);
}

void put_unwind_info(unw_addr_space_t, unw_proc_info_t*, void*) {}

int get_dyn_info_list_addr(unw_addr_space_t, unw_word_t*, void*) { return -UNW_ENOINFO; }

int access_mem(unw_addr_space_t, unw_word_t addr, unw_word_t* val, int write, void* arg) {
  if (write) return -UNW_EINVAL;
  auto* s = static_cast<const Sample*>(arg);
  if (addr >= s->sp && addr + sizeof *val <= s->sp + s->size && addr + sizeof *val > addr) {
    std::memcpy(val, s->stack + (addr - s->sp), sizeof *val);
    return 0;
  }
  if (readable(addr, sizeof *val)) {
    std::memcpy(val, reinterpret_cast<const void*>(addr), sizeof *val);
    return 0;
  }
  return -UNW_EINVAL;
}

// libunwind's x86-64 numbers -> the index in the sample (perf's order: AX BX CX DX SI DI BP SP IP R8..R15).
int sample_index(unw_regnum_t r) {
  switch (r) {
    case UNW_X86_64_RAX: return 0;
    case UNW_X86_64_RBX: return 1;
    case UNW_X86_64_RCX: return 2;
    case UNW_X86_64_RDX: return 3;
    case UNW_X86_64_RSI: return 4;
    case UNW_X86_64_RDI: return 5;
    case UNW_X86_64_RBP: return 6;
    case UNW_X86_64_RSP: return 7;
    case UNW_X86_64_RIP: return 8;
    default:
      if (r >= UNW_X86_64_R8 && r <= UNW_X86_64_R15) return 9 + (r - UNW_X86_64_R8);
      return -1;
  }
}

int access_reg(unw_addr_space_t, unw_regnum_t reg, unw_word_t* val, int write, void* arg) {
  if (write) return -UNW_EREADONLYREG;
  int i = sample_index(reg);
  if (i < 0) return -UNW_EBADREG;
  *val = static_cast<const Sample*>(arg)->regs[i];
  return 0;
}

int access_fpreg(unw_addr_space_t, unw_regnum_t, unw_fpreg_t*, int, void*) { return -UNW_EINVAL; }
int resume(unw_addr_space_t, unw_cursor_t*, void*) { return -UNW_EINVAL; }
int get_proc_name(unw_addr_space_t, unw_word_t, char*, size_t, unw_word_t*, void*) { return -UNW_EINVAL; }

unw_accessors_t g_accessors = {find_proc_info, put_unwind_info, get_dyn_info_list_addr, access_mem,
                               access_reg,     access_fpreg,    resume,                 get_proc_name};

}  // namespace

bool load() {
  if (g_as) return true;
  stacks::UnwindScope in;  // a pipe it may open for itself goes out of the program's way (pipe_hooks.cpp)
  void* h = dlopen("libunwind-x86_64.so.8", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return false;
  g_create = reinterpret_cast<CreateFn>(dlsym(h, "_Ux86_64_create_addr_space"));
  g_caching = reinterpret_cast<CachingFn>(dlsym(h, "_Ux86_64_set_caching_policy"));
  g_flush = reinterpret_cast<FlushFn>(dlsym(h, "_Ux86_64_flush_cache"));
  g_init_remote = reinterpret_cast<InitRemoteFn>(dlsym(h, "_Ux86_64_init_remote"));
  g_get_reg = reinterpret_cast<GetRegFn>(dlsym(h, "_Ux86_64_get_reg"));
  g_step = reinterpret_cast<StepFn>(dlsym(h, "_Ux86_64_step"));
  g_search = reinterpret_cast<SearchFn>(dlsym(h, "_Ux86_64_dwarf_search_unwind_table"));
  if (!g_create || !g_caching || !g_flush || !g_init_remote || !g_get_reg || !g_step || !g_search) return false;
  g_as = g_create(&g_accessors, 0);
  if (!g_as) return false;
  g_caching(g_as, UNW_CACHE_GLOBAL);  // one caller at a time (perf_drain's lock)
  return true;
}

void refresh_modules() {
  unsigned long long n = loader_count();
  if (n == g_loader_count && !g_modules.empty()) return;
  g_loader_count = n;
  g_modules.clear();
  g_segments.clear();
  dl_iterate_phdr(collect, nullptr);
  std::sort(g_modules.begin(), g_modules.end(), [](const Module& a, const Module& b) { return a.lo < b.lo; });
  std::sort(g_segments.begin(), g_segments.end(), [](const Segment& a, const Segment& b) { return a.lo < b.lo; });
  if (g_as) g_flush(g_as, 0, 0);  // cached procedure info may name unloaded code
}

int unwind(const uint64_t* regs, const uint8_t* stack, uint64_t size, uintptr_t* ip, int max) {
  if (max <= 0) return 0;
  if (!g_as) {
    ip[0] = regs[8];
    return 1;
  }
  stacks::UnwindScope in;
  Sample s{regs, stack, regs[7], size};
  unw_cursor_t cur;
  int n = 0;
  if (g_init_remote(&cur, g_as, &s) == 0) {
    do {
      unw_word_t v = 0;
      if (g_get_reg(&cur, UNW_REG_IP, &v) != 0 || v == 0) break;
      ip[n++] = uintptr_t(v);
    } while (n < max && g_step(&cur) > 0);
  }
  if (n == 0) ip[n++] = regs[8];
  return n;
}

}  // namespace txray::cpu::perfu
