/* zlib's CRC-32 by carry-less multiplication (PCLMULQDQ), for the bodies of stored records.
 *
 * Every record's BODYCRC is the CRC-32 of its body; for a 1 KiB body the table code of crc32.c
 * (eight lookups per eight bytes) is about a tenth of the broker's CPU in a batched send. A CRC
 * is the remainder of a polynomial division over GF(2), and the remainder of a long message
 * can be "folded": a 128-bit chunk followed by N more bits has the same remainder as that
 * chunk multiplied by x^N mod P, added (xor) to what follows. With x^N mod P precomputed for
 * the distances used (the constants below, in the bit-reflected order zlib's CRC uses), the
 * message is folded 64 bytes per step in four independent lanes, the lanes into one 128-bit
 * value, that to 64 bits, and a Barrett reduction gives the 32-bit remainder: the same value
 * the tables give, far fewer instructions per byte.
 *
 * Used only on CPUs that have PCLMULQDQ and SSE4.1 (checked once at start); elsewhere, and for
 * the last bytes (fewer than 16), crc32.c's tables. tests/protocol/test_native_codecs.py
 * compares the result with zlib.crc32 for every length and alignment.
 */
#include "rocketq_native.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RQ_HAVE_FOLD 1
#include <immintrin.h>

/* x^N mod P (bit-reflected, 33 bits) for the folding distances, and P with its Barrett mu. */
#define FOLD_512_LOW 0x0154442bd4ULL   /* fold 4 lanes: x^(4*128+32) and x^(4*128-32) mod P */
#define FOLD_512_HIGH 0x01c6e41596ULL
#define FOLD_128_LOW 0x01751997d0ULL   /* fold 1 lane: x^(128+32) and x^(128-32) mod P */
#define FOLD_128_HIGH 0x00ccaa009eULL
#define FOLD_64 0x0163cd6124ULL        /* 128 -> 64 bits: x^64 mod P */
#define POLY 0x01db710641ULL           /* P, reflected */
#define BARRETT_MU 0x01f7011641ULL     /* floor(x^64 / P), reflected */

#define LANE 16
#define BLOCK (4 * LANE)

static int fold_usable = -1;

int rq_crc32_fold_usable(void)
{
    if (fold_usable < 0) {
        __builtin_cpu_init();
        fold_usable = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    }
    return fold_usable;
}

/* One lane folded over the next 16 bytes: lane * x^distance + next. */
__attribute__((target("pclmul,sse4.1")))
static inline __m128i fold(__m128i lane, __m128i next, __m128i k)
{
    __m128i low = _mm_clmulepi64_si128(lane, k, 0x00);
    __m128i high = _mm_clmulepi64_si128(lane, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

/* The running (pre-inverted) CRC ``crc`` advanced over ``n`` bytes: n >= BLOCK, n % LANE == 0. */
__attribute__((target("pclmul,sse4.1")))
uint32_t rq_crc32_fold(uint32_t crc, const unsigned char *p, Py_ssize_t n)
{
    __m128i k, a, b, c, d, mask, t;
    a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)crc));
    b = _mm_loadu_si128((const __m128i *)(p + LANE));
    c = _mm_loadu_si128((const __m128i *)(p + 2 * LANE));
    d = _mm_loadu_si128((const __m128i *)(p + 3 * LANE));
    p += BLOCK;
    n -= BLOCK;
    k = _mm_set_epi64x((long long)FOLD_512_HIGH, (long long)FOLD_512_LOW);
    while (n >= BLOCK) {
        a = fold(a, _mm_loadu_si128((const __m128i *)p), k);
        b = fold(b, _mm_loadu_si128((const __m128i *)(p + LANE)), k);
        c = fold(c, _mm_loadu_si128((const __m128i *)(p + 2 * LANE)), k);
        d = fold(d, _mm_loadu_si128((const __m128i *)(p + 3 * LANE)), k);
        p += BLOCK;
        n -= BLOCK;
    }
    k = _mm_set_epi64x((long long)FOLD_128_HIGH, (long long)FOLD_128_LOW);
    a = fold(a, b, k);
    a = fold(a, c, k);
    a = fold(a, d, k);
    while (n >= LANE) {
        a = fold(a, _mm_loadu_si128((const __m128i *)p), k);
        p += LANE;
        n -= LANE;
    }
    /* 128 -> 96 -> 64 bits */
    mask = _mm_setr_epi32(-1, 0, -1, 0);
    t = _mm_clmulepi64_si128(a, k, 0x10);
    a = _mm_xor_si128(_mm_srli_si128(a, 8), t);
    t = _mm_srli_si128(a, 4);
    a = _mm_clmulepi64_si128(_mm_and_si128(a, mask), _mm_set_epi64x(0, (long long)FOLD_64), 0x00);
    a = _mm_xor_si128(a, t);
    /* Barrett: the remainder of the 64-bit value, 32 bits */
    k = _mm_set_epi64x((long long)BARRETT_MU, (long long)POLY);
    t = _mm_clmulepi64_si128(_mm_and_si128(a, mask), k, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, mask), k, 0x00);
    a = _mm_xor_si128(a, t);
    return (uint32_t)_mm_extract_epi32(a, 1);
}

#else

int rq_crc32_fold_usable(void)
{
    return 0;
}

uint32_t rq_crc32_fold(uint32_t crc, const unsigned char *p, Py_ssize_t n)
{
    return crc;  /* never called: rq_crc32_fold_usable() is 0 */
}

#endif
