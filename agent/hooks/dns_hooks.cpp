// DNS steps: getaddrinfo and the gethostbyname family. One DNS row per lookup made inside a
// transaction: text = the name asked, attributes host (the name) and addr (the first address
// returned), elapsed, and the resolver's error text when it failed. Lookups of numeric addresses
// ("127.0.0.1", "::1") resolve nothing and make no row. Sockets the resolver opens (to a DNS server,
// to nscd) nest under the row.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "core/recorder.h"
#include "hooks/hook.h"

namespace {

bool is_numeric_host(const char* name) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

// Opens the DNS row when this lookup is to be recorded (empty StepRef otherwise).
txray::StepRef open_lookup(const char* name) {
  if (!name || !*name || is_numeric_host(name)) return {};
  txray::Transaction* tx = txray::rec::current();
  if (!tx) return {};
  txray::StepRef s = txray::rec::open(tx, txray::StepKind::DNS);
  txray::rec::set_text(s, name);
  txray::rec::add_attr(s, "host", name);
  return s;
}

void set_addr(txray::StepRef& s, const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = "";
  if (sa && sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
  else if (sa && sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof text);
  if (*text) txray::rec::add_attr(s, "addr", text);
}

void set_hostent_addr(txray::StepRef& s, const hostent* h) {
  if (!h || !h->h_addr_list || !h->h_addr_list[0]) return;
  char text[INET6_ADDRSTRLEN] = "";
  if (inet_ntop(h->h_addrtype, h->h_addr_list[0], text, sizeof text)) txray::rec::add_attr(s, "addr", text);
}

// h_errno values as text (hstrerror is obsolete but still the only table glibc has).
const char* herror_text(int err) {
  switch (err) {
    case HOST_NOT_FOUND: return "host not found";
    case TRY_AGAIN: return "temporary failure in name resolution";
    case NO_RECOVERY: return "non-recoverable failure in name resolution";
    case NO_DATA: return "no address for this name";
    default: return "name resolution failed";
  }
}

void finish_hostent(txray::StepRef& s, const hostent* h, int herr) {
  if (h) {
    set_hostent_addr(s, h);
  } else {
    txray::rec::set_error(s, herror_text(herr));
  }
  txray::rec::close(s);
}

}  // namespace

extern "C" int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                           struct addrinfo** res) {
  auto real = TXRAY_REAL(getaddrinfo, nullptr);
  if (!real) {
    errno = ENOSYS;
    return EAI_SYSTEM;
  }
  txray::HookGuard guard(txray::HookFamily::dns);
  if (!guard) return real(node, service, hints, res);
  txray::StepRef s = open_lookup(node);
  if (!s) return real(node, service, hints, res);
  int rc = real(node, service, hints, res);
  int err = errno;
  txray::SaveErrno keep;
  if (rc == 0 && res && *res) {
    set_addr(s, (*res)->ai_addr);
  } else if (rc == EAI_SYSTEM) {
    txray::rec::set_error(s, strerror(err));
  } else {
    txray::rec::set_error(s, gai_strerror(rc));
  }
  txray::rec::close(s);
  return rc;
}

extern "C" struct hostent* gethostbyname(const char* name) {
  auto real = TXRAY_REAL(gethostbyname, nullptr);
  if (!real) {
    h_errno = NO_RECOVERY;
    return nullptr;
  }
  txray::HookGuard guard(txray::HookFamily::dns);
  if (!guard) return real(name);
  txray::StepRef s = open_lookup(name);
  if (!s) return real(name);
  hostent* h = real(name);
  txray::SaveErrno keep;
  int herr = h_errno;
  finish_hostent(s, h, herr);
  h_errno = herr;
  return h;
}

extern "C" struct hostent* gethostbyname2(const char* name, int af) {
  auto real = TXRAY_REAL(gethostbyname2, nullptr);
  if (!real) {
    h_errno = NO_RECOVERY;
    return nullptr;
  }
  txray::HookGuard guard(txray::HookFamily::dns);
  if (!guard) return real(name, af);
  txray::StepRef s = open_lookup(name);
  if (!s) return real(name, af);
  hostent* h = real(name, af);
  txray::SaveErrno keep;
  int herr = h_errno;
  finish_hostent(s, h, herr);
  h_errno = herr;
  return h;
}

// The _r forms return ERANGE when the caller's buffer is too small and the caller retries with a
// bigger one: such an attempt keeps its row, marked with that error.
extern "C" int gethostbyname_r(const char* name, struct hostent* ret, char* buf, size_t buflen,
                               struct hostent** result, int* h_errnop) {
  auto real = TXRAY_REAL(gethostbyname_r, nullptr);
  if (!real) return ENOSYS;
  txray::HookGuard guard(txray::HookFamily::dns);
  if (!guard) return real(name, ret, buf, buflen, result, h_errnop);
  txray::StepRef s = open_lookup(name);
  if (!s) return real(name, ret, buf, buflen, result, h_errnop);
  int rc = real(name, ret, buf, buflen, result, h_errnop);
  txray::SaveErrno keep;
  if (rc == ERANGE) {
    txray::rec::set_error(s, "buffer too small (the caller retries)");
  }
  finish_hostent(s, rc == 0 && result ? *result : nullptr, h_errnop ? *h_errnop : 0);
  return rc;
}

extern "C" int gethostbyname2_r(const char* name, int af, struct hostent* ret, char* buf, size_t buflen,
                                struct hostent** result, int* h_errnop) {
  auto real = TXRAY_REAL(gethostbyname2_r, nullptr);
  if (!real) return ENOSYS;
  txray::HookGuard guard(txray::HookFamily::dns);
  if (!guard) return real(name, af, ret, buf, buflen, result, h_errnop);
  txray::StepRef s = open_lookup(name);
  if (!s) return real(name, af, ret, buf, buflen, result, h_errnop);
  int rc = real(name, af, ret, buf, buflen, result, h_errnop);
  txray::SaveErrno keep;
  finish_hostent(s, rc == 0 && result ? *result : nullptr, h_errnop ? *h_errnop : 0);
  return rc;
}
