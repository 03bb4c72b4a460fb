#include "transport/curve_client.h"

#include <dlfcn.h>
#include <sodium.h>  // types and sizes only: the functions come from dlopen (below)

#include <cstring>
#include <mutex>
#include <type_traits>
#include <vector>

namespace txray::transport {
namespace {

// libsodium is loaded when a CURVE connection is first made, not linked: a traced program without
// CURVE keys maps nothing of it (the agent itself depends on libc only).
struct Sodium {
  int (*init)();
  int (*keypair)(unsigned char*, unsigned char*);
  int (*box_easy)(unsigned char*, const unsigned char*, unsigned long long, const unsigned char*,
                  const unsigned char*, const unsigned char*);
  int (*open_easy)(unsigned char*, const unsigned char*, unsigned long long, const unsigned char*,
                   const unsigned char*, const unsigned char*);
  int (*beforenm)(unsigned char*, const unsigned char*, const unsigned char*);
  int (*easy_afternm)(unsigned char*, const unsigned char*, unsigned long long, const unsigned char*,
                      const unsigned char*);
  int (*open_easy_afternm)(unsigned char*, const unsigned char*, unsigned long long, const unsigned char*,
                           const unsigned char*);
  void (*random)(void*, size_t);
  void (*memzero)(void*, size_t);
  int (*scalarmult_base)(unsigned char*, const unsigned char*);
  bool ok = false;
};

const Sodium& sodium() {
  static Sodium s;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libsodium.so.23", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    bool all = true;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      all = all && fn;
    };
    get(s.init, "sodium_init");
    get(s.keypair, "crypto_box_keypair");
    get(s.box_easy, "crypto_box_easy");
    get(s.open_easy, "crypto_box_open_easy");
    get(s.beforenm, "crypto_box_beforenm");
    get(s.easy_afternm, "crypto_box_easy_afternm");
    get(s.open_easy_afternm, "crypto_box_open_easy_afternm");
    get(s.random, "randombytes_buf");
    get(s.memzero, "sodium_memzero");
    get(s.scalarmult_base, "crypto_scalarmult_base");
    s.ok = all && s.init() >= 0;
  });
  return s;
}

void put_be64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = uint8_t(v);
}
uint64_t get_be64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

// nonce = 16-byte prefix + 8-byte big-endian counter (short nonce), or 8-byte prefix + 16 bytes (long)
void short_nonce(uint8_t nonce[crypto_box_NONCEBYTES], const char prefix[17], uint64_t n) {
  memcpy(nonce, prefix, 16);
  put_be64(nonce + 16, n);
}

}  // namespace

CurveClient::~CurveClient() {
  // explicit_bzero: not optimised away, and needs no libsodium when CURVE was never used
  explicit_bzero(secret_, sizeof secret_);
  explicit_bzero(eph_secret_, sizeof eph_secret_);
  explicit_bzero(shared_, sizeof shared_);
}

bool CurveClient::init(const uint8_t server_public[kKeySize], const uint8_t client_public[kKeySize],
                       const uint8_t client_secret[kKeySize]) {
  if (!sodium().ok) return false;
  memcpy(server_, server_public, kKeySize);
  memcpy(public_, client_public, kKeySize);
  memcpy(secret_, client_secret, kKeySize);
  nonce_ = peer_nonce_ = 0;
  return sodium().keypair(eph_public_, eph_secret_) == 0;
}

bool CurveClient::hello(uint8_t out[kHelloSize]) {
  uint8_t nonce[crypto_box_NONCEBYTES];
  uint64_t n = next_nonce();
  short_nonce(nonce, "CurveZMQHELLO---", n);
  uint8_t zeros[64] = {};
  uint8_t box[64 + crypto_box_MACBYTES];
  if (sodium().box_easy(box, zeros, sizeof zeros, nonce, server_, eph_secret_) != 0) return false;
  memset(out, 0, kHelloSize);
  memcpy(out, "\x05HELLO", 6);
  out[6] = 1;  // CurveZMQ 1.0
  out[7] = 0;
  // out[8..80): anti-amplification padding (zeros)
  memcpy(out + 80, eph_public_, kKeySize);
  put_be64(out + 112, n);
  memcpy(out + 120, box, sizeof box);
  return true;
}

bool CurveClient::welcome(const uint8_t* body, size_t n) {
  if (n != 168 || memcmp(body, "\x07WELCOME", 8) != 0) return false;
  uint8_t nonce[crypto_box_NONCEBYTES];
  memcpy(nonce, "WELCOME-", 8);
  memcpy(nonce + 8, body + 8, 16);
  uint8_t plain[128];
  if (sodium().open_easy(plain, body + 24, 144, nonce, server_, eph_secret_) != 0) return false;
  memcpy(server_eph_, plain, kKeySize);
  memcpy(cookie_, plain + 32, sizeof cookie_);
  return sodium().beforenm(shared_, server_eph_, eph_secret_) == 0;
}

bool CurveClient::initiate(const uint8_t* metadata, size_t metadata_len, std::string* out) {
  // vouch = long nonce (16) + Box[C' + S](C->S')
  uint8_t vnonce[crypto_box_NONCEBYTES];
  memcpy(vnonce, "VOUCH---", 8);
  sodium().random(vnonce + 8, 16);
  uint8_t vplain[64];
  memcpy(vplain, eph_public_, 32);
  memcpy(vplain + 32, server_, 32);
  uint8_t vbox[64 + crypto_box_MACBYTES];
  if (sodium().box_easy(vbox, vplain, sizeof vplain, vnonce, server_eph_, secret_) != 0) return false;

  std::vector<uint8_t> plain(32 + 16 + sizeof vbox + metadata_len);
  memcpy(plain.data(), public_, 32);
  memcpy(plain.data() + 32, vnonce + 8, 16);
  memcpy(plain.data() + 48, vbox, sizeof vbox);
  if (metadata_len) memcpy(plain.data() + 48 + sizeof vbox, metadata, metadata_len);

  uint8_t nonce[crypto_box_NONCEBYTES];
  uint64_t n = next_nonce();
  short_nonce(nonce, "CurveZMQINITIATE", n);
  out->assign(9 + 96 + 8 + plain.size() + crypto_box_MACBYTES, '\0');
  auto* o = reinterpret_cast<uint8_t*>(out->data());
  memcpy(o, "\x08INITIATE", 9);
  memcpy(o + 9, cookie_, 96);
  put_be64(o + 105, n);
  bool ok = sodium().easy_afternm(o + 113, plain.data(), plain.size(), nonce, shared_) == 0;
  explicit_bzero(plain.data(), plain.size());
  return ok;
}

bool CurveClient::ready(const uint8_t* body, size_t n, std::string* metadata) {
  if (n < 14 + crypto_box_MACBYTES || memcmp(body, "\x05READY", 6) != 0) return false;
  uint64_t pn = get_be64(body + 6);
  uint8_t nonce[crypto_box_NONCEBYTES];
  short_nonce(nonce, "CurveZMQREADY---", pn);
  size_t clen = n - 14;
  metadata->assign(clen - crypto_box_MACBYTES, '\0');
  if (sodium().open_easy_afternm(reinterpret_cast<uint8_t*>(metadata->data()), body + 14, clen, nonce,
                                   shared_) != 0)
    return false;
  peer_nonce_ = pn;
  return true;
}

bool CurveClient::seal(const void* data, size_t n, std::string* out) {
  uint8_t nonce[crypto_box_NONCEBYTES];
  uint64_t sn = next_nonce();
  short_nonce(nonce, "CurveZMQMESSAGEC", sn);
  std::vector<uint8_t> plain(1 + n);
  plain[0] = 0;  // flags: no MORE, not a command
  if (n) memcpy(plain.data() + 1, data, n);
  out->assign(8 + 8 + plain.size() + crypto_box_MACBYTES, '\0');
  auto* o = reinterpret_cast<uint8_t*>(out->data());
  memcpy(o, "\x07MESSAGE", 8);
  put_be64(o + 8, sn);
  return sodium().easy_afternm(o + 16, plain.data(), plain.size(), nonce, shared_) == 0;
}

void derive_public_key(const uint8_t secret[32], uint8_t public_key[32]) {
  if (sodium().ok) sodium().scalarmult_base(public_key, secret);
  else memset(public_key, 0, 32);
}

bool z85_decode_key(const std::string& text, uint8_t out[32]) {
  static const char kAlphabet[] =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (text.size() != 40) return false;
  size_t o = 0;
  for (size_t i = 0; i < 40; i += 5) {
    uint64_t v = 0;
    for (size_t k = 0; k < 5; ++k) {
      const char* p = strchr(kAlphabet, text[i + k]);
      if (!p || !*p) return false;
      v = v * 85 + uint64_t(p - kAlphabet);
    }
    if (v > 0xffffffffull) return false;
    for (int k = 3; k >= 0; --k) out[o + size_t(3 - k)] = uint8_t(v >> (8 * k));
    o += 4;
  }
  return true;
}

}  // namespace txray::transport
