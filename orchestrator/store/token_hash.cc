#include "orchestrator/store/token_hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <vector>

namespace baton {

namespace {

std::string Hex(const unsigned char* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool Unhex(const std::string& hex, std::vector<unsigned char>* out) {
  if (hex.size() % 2 != 0) return false;
  out->resize(hex.size() / 2);
  for (size_t i = 0; i < out->size(); ++i) {
    const int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

}  // namespace

Result<std::string> RandomHex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1) {
    return Status::Internal("the random source (RAND_bytes) failed");
  }
  return Hex(buf.data(), buf.size());
}

std::string TokenHash(const std::string& salt_hex, const std::string& token) {
  std::vector<unsigned char> salt;
  if (!Unhex(salt_hex, &salt)) return "";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, salt.data(), salt.size()) == 1 &&
                  EVP_DigestUpdate(ctx, token.data(), token.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, digest, &len) == 1;
  EVP_MD_CTX_free(ctx);
  return ok ? Hex(digest, len) : "";
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool TokenMatches(const std::string& token, const std::string& salt_hex,
                  const std::string& hash_hex) {
  const std::string h = TokenHash(salt_hex, token);
  return !h.empty() && ConstantTimeEquals(h, hash_hex);
}

}  // namespace baton
