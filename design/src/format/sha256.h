#pragma once
// SHA-256 (FIPS 180-4), small and dependency-free: the design file's integrity value and the
// Design fingerprint both use it, and Python's hashlib recomputes it (docs/design-format.md).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cerar::detail {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, std::size_t size);
  void Update(std::string_view bytes) { Update(bytes.data(), bytes.size()); }
  // Finishes the hash; the object must not be updated afterwards.
  std::array<std::uint8_t, 32> Digest();

 private:
  void Block(const std::uint8_t* block);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

// Lower-case hex of the SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);
std::string ToHex(const std::uint8_t* data, std::size_t size);

}  // namespace cerar::detail
