// See db_checksum.h. With b_0 .. b_{n-1} the bytes, __ham_func4 returns
//   h = sum of b_i * 33^(n-1-i)   (mod 2^32),
// so a block of k bytes folds in as h = h * 33^k + (the block's bytes weighed by 33^(k-1-j)).
#include "schema/db_checksum.h"

#include <immintrin.h>

#include <array>
#include <cstring>

namespace amino::schema {
namespace {

constexpr uint32_t Pow33(unsigned n) {
  uint32_t p = 1;
  for (unsigned i = 0; i < n; ++i) p *= 33;
  return p;
}

// kWeights[j] = 33^(31-j): the weight of byte j of a 32-byte block.
constexpr std::array<uint32_t, 32> MakeWeights() {
  std::array<uint32_t, 32> w{};
  for (unsigned j = 0; j < 32; ++j) w[j] = Pow33(31 - j);
  return w;
}
constexpr std::array<uint32_t, 32> kWeights = MakeWeights();

uint32_t Tail(uint32_t h, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) h = h * 33 + p[i];
  return h;
}

}  // namespace

uint32_t DbChecksumHashPortable(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  constexpr uint32_t k8 = Pow33(8);
  uint32_t h = 0;
  size_t i = 0;
  // Eight products per step are independent; only h * 33^8 chains from step to step.
  for (; i + 8 <= len; i += 8) {
    const uint32_t s = p[i] * kWeights[24] + p[i + 1] * kWeights[25] + p[i + 2] * kWeights[26] +
                       p[i + 3] * kWeights[27] + p[i + 4] * kWeights[28] + p[i + 5] * kWeights[29] +
                       p[i + 6] * kWeights[30] + p[i + 7];
    h = h * k8 + s;
  }
  return Tail(h, p + i, len - i);
}

__attribute__((target("avx2"))) uint32_t DbChecksumHashAvx2(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  // Lane j of the four accumulators (32 lanes) sums bytes j, j + 32, j + 64, ... each block
  // multiplying what came before by 33^32; at the end lane j is weighed by 33^(31-j).
  const __m256i step = _mm256_set1_epi32(static_cast<int>(Pow33(32)));
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  const size_t blocks = len / 32;
  for (size_t b = 0; b < blocks; ++b, p += 32) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
    a0 = _mm256_add_epi32(_mm256_mullo_epi32(a0, step), _mm256_cvtepu8_epi32(lo));
    a1 =
        _mm256_add_epi32(_mm256_mullo_epi32(a1, step), _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)));
    a2 = _mm256_add_epi32(_mm256_mullo_epi32(a2, step), _mm256_cvtepu8_epi32(hi));
    a3 =
        _mm256_add_epi32(_mm256_mullo_epi32(a3, step), _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)));
  }
  uint32_t h = 0;
  if (blocks != 0) {
    const auto* w = reinterpret_cast<const __m256i*>(kWeights.data());
    __m256i s = _mm256_mullo_epi32(a0, _mm256_loadu_si256(w));
    s = _mm256_add_epi32(s, _mm256_mullo_epi32(a1, _mm256_loadu_si256(w + 1)));
    s = _mm256_add_epi32(s, _mm256_mullo_epi32(a2, _mm256_loadu_si256(w + 2)));
    s = _mm256_add_epi32(s, _mm256_mullo_epi32(a3, _mm256_loadu_si256(w + 3)));
    uint32_t lanes[8];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), s);
    for (uint32_t v : lanes) h += v;
  }
  return Tail(h, p, len % 32);
}

bool DbChecksumHasAvx2() {
  static const bool has = [] {
    __builtin_cpu_init();  // libdb may hash before the constructors that would have run it
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
}

uint32_t DbChecksumHash(const void* data, size_t len) {
  // Below a few blocks the vector set-up costs more than it saves.
  if (len >= 128 && DbChecksumHasAvx2()) return DbChecksumHashAvx2(data, len);
  return DbChecksumHashPortable(data, len);
}

}  // namespace amino::schema

// The definition libdb's calls bind to (see db_checksum.h); the DB handle is unused there too.
extern "C" __attribute__((visibility("default"))) uint32_t __ham_func4(void* /*dbp*/,
                                                                       const void* key,
                                                                       uint32_t len) {
  return amino::schema::DbChecksumHash(key, len);
}
