// The work of one burner request, kept apart from the serving code.
#pragma once

#include <cstdint>
#include <string>

namespace txray::samples::burner {

// Connects to host:port, reads until the back-end closes, closes. Returns the bytes read and their
// checksum (FNV-1a). Throws std::runtime_error when the back-end cannot be reached.
struct Fetched {
  uint64_t bytes = 0;
  uint64_t checksum = 0;
};
Fetched fetch(const std::string& host, uint16_t port);

// Spins until the calling thread has used `us` microseconds of CPU; returns the CPU ns actually used.
long long burn_cpu_us(long long us);

// The back-end's payload: `n` bytes of a fixed pattern.
std::string payload(uint64_t n);

}  // namespace txray::samples::burner
