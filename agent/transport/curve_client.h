// The client side of CurveZMQ (https://rfc.zeromq.org/spec/26/), the ZMTP security mechanism "CURVE",
// for the agent's own ZMTP peer (zmtp.h). Pure: it builds and checks command bodies and seals messages;
// the peer does the I/O. libsodium does the cryptography (crypto_box: Curve25519, XSalsa20, Poly1305).
//
//   client                                  server (txray collect, libzmq CURVE server)
//   HELLO    C', Box[64 zeros](C'->S)   ->
//                                       <-  WELCOME  Box[S' + cookie](S->C')
//   INITIATE cookie, Box[C + vouch + metadata](C'->S'), vouch = Box[C' + S](C->S')  ->
//                                       <-  READY    Box[metadata](S'->C')
//   MESSAGE  Box[flags + body](C'->S'), short nonces strictly increasing
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace txray::transport {

class CurveClient {
 public:
  static constexpr size_t kKeySize = 32;
  static constexpr size_t kHelloSize = 200;

  // The collector's long-term public key S and the agent's own key pair (C, c). False when libsodium
  // cannot be initialised.
  bool init(const uint8_t server_public[kKeySize], const uint8_t client_public[kKeySize],
            const uint8_t client_secret[kKeySize]);

  // The HELLO command body (kHelloSize bytes, "\x05HELLO" first).
  bool hello(uint8_t out[kHelloSize]);
  // Checks the WELCOME command body and keeps S' and the cookie. False: not from the holder of S.
  bool welcome(const uint8_t* body, size_t n);
  // The INITIATE command body, with `metadata` (ZMTP properties: Socket-Type …) inside the box.
  bool initiate(const uint8_t* metadata, size_t metadata_len, std::string* out);
  // Checks the READY command body; its metadata (opened) goes to *metadata.
  bool ready(const uint8_t* body, size_t n, std::string* metadata);
  // One message as the body of a MESSAGE frame.
  bool seal(const void* data, size_t n, std::string* out);

  ~CurveClient();

 private:
  uint64_t next_nonce() { return ++nonce_; }

  uint8_t server_[kKeySize] = {};        // S
  uint8_t public_[kKeySize] = {};        // C
  uint8_t secret_[kKeySize] = {};        // c
  uint8_t eph_public_[kKeySize] = {};    // C'
  uint8_t eph_secret_[kKeySize] = {};    // c'
  uint8_t server_eph_[kKeySize] = {};    // S'
  uint8_t cookie_[96] = {};
  uint8_t shared_[32] = {};              // crypto_box_beforenm(S', c')
  uint64_t nonce_ = 0;                   // short nonces: HELLO 1, INITIATE 2, MESSAGE 3, …
  uint64_t peer_nonce_ = 0;
};

// Decodes a Z85 key (40 characters) into 32 bytes. False for anything else.
bool z85_decode_key(const std::string& text, uint8_t out[32]);
// The Curve25519 public key of a secret key.
void derive_public_key(const uint8_t secret[32], uint8_t public_key[32]);

}  // namespace txray::transport
