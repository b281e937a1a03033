/* zlib's CRC-32 (the one in every stored record's BODYCRC), eight bytes per step.
 *
 * The byte-at-a-time table update is crc = T0[(crc ^ b) & 0xff] ^ (crc >> 8). Tables T1..T7
 * advance a byte's contribution by one to seven more zero bytes, so eight input bytes combine
 * into one step of eight independent lookups ("slicing by 8"). No zlib headers are needed to
 * build it, and calling Python's zlib.crc32 from C would cost a call per record.
 */
#include "rocketq_native.h"

#define CRC32_POLY 0xEDB88320u

static uint32_t crc_tables[8][256];

void rq_crc32_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int bit = 0; bit < 8; bit++)
            c = (c & 1) ? (c >> 1) ^ CRC32_POLY : c >> 1;
        crc_tables[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++)
            crc_tables[k][i] = (crc_tables[k - 1][i] >> 8) ^ crc_tables[0][crc_tables[k - 1][i] & 0xFF];
}

static inline uint32_t load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Inputs at least this long go through the carry-less multiplication (crc32fold.c) when the
 * CPU has it; shorter ones cost less through the tables than its set-up and reduction. */
#define FOLD_MIN_LENGTH 64

uint32_t rq_crc32(const unsigned char *p, Py_ssize_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
    if (n >= FOLD_MIN_LENGTH && rq_crc32_fold_usable()) {
        Py_ssize_t folded = n & ~(Py_ssize_t)15;
        crc = rq_crc32_fold(crc, p, folded);
        p += folded;
        n -= folded;
    }
    while (n >= 8) {
        uint32_t one = load_le32(p) ^ crc;
        uint32_t two = load_le32(p + 4);
        crc = crc_tables[7][one & 0xFF] ^ crc_tables[6][(one >> 8) & 0xFF] ^ crc_tables[5][(one >> 16) & 0xFF]
            ^ crc_tables[4][one >> 24] ^ crc_tables[3][two & 0xFF] ^ crc_tables[2][(two >> 8) & 0xFF]
            ^ crc_tables[1][(two >> 16) & 0xFF] ^ crc_tables[0][two >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- > 0)
        crc = crc_tables[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}
