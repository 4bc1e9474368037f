#include "CSuiteDefaults.h"

#include <pthread.h>
#include <string.h>

static uint32_t crc32c_table[8][256];
static pthread_once_t crc32c_table_once = PTHREAD_ONCE_INIT;

static void crc32c_build_table(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = n;
        for (int k = 0; k < 8; k++) {
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
        crc32c_table[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = crc32c_table[0][n];
        for (int k = 1; k < 8; k++) {
            crc = crc32c_table[0][crc & 0xFF] ^ (crc >> 8);
            crc32c_table[k][n] = crc;
        }
    }
}

// Slicing-by-8 over the tables, for processors without the instruction.
static uint32_t crc32c_portable(uint32_t crc, const unsigned char *p, size_t length) {
    pthread_once(&crc32c_table_once, crc32c_build_table);
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        word = __builtin_bswap64(word);
#endif
        word ^= crc;
        crc = crc32c_table[7][word & 0xFF] ^ crc32c_table[6][(word >> 8) & 0xFF] ^
              crc32c_table[5][(word >> 16) & 0xFF] ^ crc32c_table[4][(word >> 24) & 0xFF] ^
              crc32c_table[3][(word >> 32) & 0xFF] ^ crc32c_table[2][(word >> 40) & 0xFF] ^
              crc32c_table[1][(word >> 48) & 0xFF] ^ crc32c_table[0][word >> 56];
        p += 8;
        length -= 8;
    }
    while (length--) {
        crc = crc32c_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    }
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const unsigned char *p, size_t length) {
    uint64_t wide = crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        wide = __builtin_ia32_crc32di(wide, word);
        p += 8;
        length -= 8;
    }
    uint32_t narrow = (uint32_t)wide;
    while (length--) {
        narrow = __builtin_ia32_crc32qi(narrow, *p++);
    }
    return narrow;
}
#endif

uint32_t sd_crc32c(uint32_t crc, const void *data, size_t length) {
    const unsigned char *p = (const unsigned char *)data;
    crc = ~crc;
#if defined(__x86_64__)
    // -1 until the first call asks the processor; racing first calls agree on the answer.
    static int has_sse42 = -1;
    int known = __atomic_load_n(&has_sse42, __ATOMIC_RELAXED);
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&has_sse42, known, __ATOMIC_RELAXED);
    }
    if (known) {
        return ~crc32c_sse42(crc, p, length);
    }
#endif
    return ~crc32c_portable(crc, p, length);
}
