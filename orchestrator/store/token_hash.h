// The per-user tokens of `baton serve --auth tokens`, as secrets and as what the store keeps of
// them (docs/team.md, "Identity and write actions").
//
// A token is 32 bytes from OpenSSL's RAND_bytes (the kernel's random source), written as 64 hex
// digits and shown once. The store keeps only a random 16-byte salt and SHA-256(salt || token),
// both hex, so a copy of the database gives no token away; a presented token is hashed with each
// stored salt and compared with CRYPTO_memcmp, which takes the same time wherever the bytes
// differ. Pure functions; thread-safe.
#pragma once

#include <string>

#include "schema/status.h"

namespace baton {

// Hex digits of a new token (kTokenBytes random bytes).
inline constexpr size_t kTokenBytes = 32;
// Random bytes of each token's salt.
inline constexpr size_t kTokenSaltBytes = 16;

// `bytes` random bytes as lowercase hex. kInternal when the random source fails.
[[nodiscard]] Result<std::string> RandomHex(size_t bytes);

// SHA-256 of the salt's bytes (decoded from hex) then the token's, as lowercase hex; "" when the
// salt is not hex.
std::string TokenHash(const std::string& salt_hex, const std::string& token);

// True when `token` hashes, with `salt_hex`, to `hash_hex`: constant time in where they differ.
bool TokenMatches(const std::string& token, const std::string& salt_hex,
                  const std::string& hash_hex);

// Equal strings, compared without an early exit (CRYPTO_memcmp); different lengths are unequal.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace baton
