// Unwinds a perf sample: the user registers and the copy of the top of the user stack that the kernel
// wrote into the ring (cpu/perf_sampler.h) become return addresses, on the agent thread, long after the
// sampled thread went on.
//
// libunwind's "remote" interface, from libunwind-x86_64.so.8 (the generic library of Debian's libunwind8
// package: the local-only libunwind.so.8 has no unw_create_addr_space), loaded RTLD_LOCAL like the local
// one (stack_capture.h). Its accessors are ours, as perf's own unwinder does it:
// - memory: a stack address inside the copy is read from the copy; any other address only when it lies in
//   a loaded module's segment (code, .eh_frame, .eh_frame_hdr), read in place — this is the same process;
//   everything else (a frame pointer into the part of the stack not copied, garbage) ends the stack;
// - registers: from the sample;
// - unwind information: the module's .eh_frame_hdr binary search table (dl_iterate_phdr), handed to
//   libunwind's dwarf_search_unwind_table.
// Not thread-safe: one caller at a time (the perf drain's lock).
#pragma once

#include <cstdint>

namespace txray::cpu::perfu {

// Number of registers in a sample (the mask of perf_sampler.cpp): AX BX CX DX SI DI BP SP IP R8..R15.
constexpr int kRegs = 17;

// Loads libunwind-x86_64.so.8 (an ordinary context). True when unwind() can work.
bool load();

// The sample's registers (perf's order, kRegs of them) and stack copy (starting at the sampled SP, `size`
// bytes) to at most `max` addresses, innermost first: ip[0] the sampled instruction. Returns how many.
int unwind(const uint64_t* regs, const uint8_t* stack, uint64_t size, uintptr_t* ip, int max);

// Re-reads the loaded modules when the loader's counts changed (before a drain).
void refresh_modules();

}  // namespace txray::cpu::perfu
