#ifndef CSUITEDEFAULTS_H
#define CSUITEDEFAULTS_H

#include <stddef.h>
#include <stdint.h>

// Atomic access to 64-bit words in memory shared between processes (a MAP_SHARED
// mapping). Swift's own atomics need storage that Swift owns, so these thin
// wrappers reach the compiler builtins for a pointer into the mapping instead.

static inline uint64_t sd_atomic_load_acquire(const uint64_t *address) {
    return __atomic_load_n(address, __ATOMIC_ACQUIRE);
}

static inline uint64_t sd_atomic_load_relaxed(const uint64_t *address) {
    return __atomic_load_n(address, __ATOMIC_RELAXED);
}

static inline void sd_atomic_store_release(uint64_t *address, uint64_t value) {
    __atomic_store_n(address, value, __ATOMIC_RELEASE);
}

static inline void sd_atomic_store_relaxed(uint64_t *address, uint64_t value) {
    __atomic_store_n(address, value, __ATOMIC_RELAXED);
}

/// CRC-32C (Castagnoli), as used by iSCSI, ext4 and SCTP: the reflected polynomial
/// 0x82F63B78, initial value 0xFFFFFFFF, final xor 0xFFFFFFFF. `crc` is the result of
/// a previous call (0 to start), so a buffer may be checksummed in pieces.
/// Uses the SSE 4.2 instruction where the processor has it.
uint32_t sd_crc32c(uint32_t crc, const void *data, size_t length);

#endif
