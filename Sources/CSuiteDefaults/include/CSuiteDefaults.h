#ifndef CSUITEDEFAULTS_H
#define CSUITEDEFAULTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

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

// Fences, for the shared header read as a sequence lock: a writer's release fence
// after it marks a change begun keeps the change's stores behind the mark; a
// reader's acquire fence after it loaded the fields keeps its second load of the
// mark behind them.
static inline void sd_atomic_fence_release(void) {
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void sd_atomic_fence_acquire(void) {
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

static inline uint32_t sd_atomic_load_u32(const uint32_t *address) {
    return __atomic_load_n(address, __ATOMIC_ACQUIRE);
}

static inline void sd_atomic_store_u32(uint32_t *address, uint32_t value) {
    __atomic_store_n(address, value, __ATOMIC_RELEASE);
}

static inline void sd_atomic_add_u32(uint32_t *address, uint32_t value) {
    __atomic_add_fetch(address, value, __ATOMIC_ACQ_REL);
}

/// Stores `desired` if the word holds `expected`; true when it did. Acquire-release.
static inline bool sd_atomic_compare_exchange_u32(uint32_t *address, uint32_t expected, uint32_t desired) {
    return __atomic_compare_exchange_n(address, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/// Subtracts one unless the word is 0 (which it leaves), acquire-release.
static inline void sd_atomic_decrement_to_zero_u32(uint32_t *address) {
    uint32_t current = __atomic_load_n(address, __ATOMIC_RELAXED);
    while (current != 0 &&
           !__atomic_compare_exchange_n(address, &current, current - 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    }
}

/// CRC-32C (Castagnoli), as used by iSCSI, ext4 and SCTP: the reflected polynomial
/// 0x82F63B78, initial value 0xFFFFFFFF, final xor 0xFFFFFFFF. `crc` is the result of
/// a previous call (0 to start), so a buffer may be checksummed in pieces.
/// Uses the SSE 4.2 instruction where the processor has it.
uint32_t sd_crc32c(uint32_t crc, const void *data, size_t length);

// MARK: fork

/// How many times this process's ancestors forked into it: 0 in the first process,
/// one more in each child (a pthread_atfork handler counts). State that a child
/// must not share with its parent (locks, descriptors, threads) records the epoch
/// it was made in and is made again when the epoch differs. Masked to 30 bits.
extern uint32_t sd_fork_epoch_storage;

static inline uint32_t sd_fork_epoch(void) {
    return __atomic_load_n(&sd_fork_epoch_storage, __ATOMIC_RELAXED) & 0x3FFFFFFFu;
}

/// Registers the fork handler that counts epochs; idempotent and cheap to repeat.
void sd_fork_epoch_start(void);

/// getpid(), kept after the first call and forgotten in a forked child: glibc no
/// longer caches it, and a commit needs it twice.
int32_t sd_process_id(void);

/// A one-shot timer on the monotonic clock, as a descriptor (`timerfd_create`), or -1.
int sd_timer_open(void);
/// Arms the timer to expire in `nanoseconds` (0 disarms it, and forgets an expiry
/// not waited for yet); -1 with errno on failure.
int sd_timer_arm(int descriptor, int64_t nanoseconds);
/// Waits until the timer expires; -1 when the descriptor cannot be read.
int sd_timer_wait(int descriptor);

/// Bytes of the heap in use (mallinfo2: blocks from the arena and mapped ones), for
/// suite-bench's memory figures: what a process holds, without the code pages that
/// first use brings in.
size_t sd_heap_bytes_in_use(void);

/// Registers a descriptor that may carry a suite's flock, so that a forked child does
/// not keep it (the fork handler puts /dev/null in its place in the child). Returns a
/// registration number, or -1 when none is free. Remove it before closing it.
int sd_lock_descriptor_add(int descriptor);
void sd_lock_descriptor_remove(int registration);

/// Names the calling thread (at most 15 bytes are kept), for debuggers and `ps`.
void sd_name_current_thread(const char *name);

// MARK: A mutex between the threads of one process, that fork resets

/// `word` is `epoch << 2 | state`, state 0 free, 1 held, 2 held with waiters. A
/// lock held in an older epoch was held by a thread of the parent, which does not
/// exist in this process: it counts as free. (Synchronization.Mutex caches thread
/// IDs across fork and aborts in a child; a pthread mutex held by a parent's thread
/// stays held forever in the child.)
typedef struct {
    uint32_t word;
} sd_thread_lock;

/// The slow paths: waiting, and waking a waiter.
void sd_thread_lock_wait(sd_thread_lock *lock, uint32_t epoch);
void sd_thread_lock_wake(sd_thread_lock *lock);

/// Takes the lock; returns the epoch to hand back to `sd_thread_lock_release`.
static inline uint32_t sd_thread_lock_acquire(sd_thread_lock *lock) {
    uint32_t epoch = sd_fork_epoch();
    uint32_t seen = __atomic_load_n(&lock->word, __ATOMIC_RELAXED);
    if (((seen >> 2) != epoch || (seen & 3) == 0) &&
        __atomic_compare_exchange_n(&lock->word, &seen, epoch << 2 | 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        return epoch;
    }
    sd_thread_lock_wait(lock, epoch);
    return epoch;
}

/// Takes the lock if it is free now, setting `*epoch` to hand back to
/// `sd_thread_lock_release`; false when it is held.
static inline bool sd_thread_lock_try_acquire(sd_thread_lock *lock, uint32_t *epoch) {
    *epoch = sd_fork_epoch();
    uint32_t seen = __atomic_load_n(&lock->word, __ATOMIC_RELAXED);
    return ((seen >> 2) != *epoch || (seen & 3) == 0) &&
        __atomic_compare_exchange_n(&lock->word, &seen, *epoch << 2 | 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/// Releases the lock taken in `epoch`; does nothing if a fork has since made it
/// another process's lock.
static inline void sd_thread_lock_release(sd_thread_lock *lock, uint32_t epoch) {
    uint32_t seen = __atomic_load_n(&lock->word, __ATOMIC_RELAXED);
    for (;;) {
        if ((seen >> 2) != epoch || (seen & 3) == 0) return;
        if (__atomic_compare_exchange_n(&lock->word, &seen, epoch << 2, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) break;
    }
    if ((seen & 3) == 2) sd_thread_lock_wake(lock);
}

/// Tells the processor that this is a busy-wait loop (x86 PAUSE, Arm YIELD).
static inline void sd_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

// MARK: File status

/// What the library reads of a file's status (`st_dev` as glibc encodes it).
typedef struct {
    uint64_t device;
    uint64_t inode;
    uint32_t mode;
    uint32_t owner;
    uint32_t group;
    int64_t size;
    uint64_t link_count;
    /// 512-byte units.
    int64_t blocks;
} sd_file_status;

/// `fstatat(directory, path, flags)` through statx, asking for the fields above and
/// never the file's times (asking for them makes the next write to the file update
/// them at once, on Linux 6.13 and later). Falls back to fstatat where statx is
/// missing. 0, or -1 with errno set.
int sd_read_file_status(int directory, const char *path, int flags, sd_file_status *status);

/// `sd_read_file_status` of an open descriptor (fstat).
int sd_read_descriptor_status(int descriptor, sd_file_status *status);

/// Exchanges the names `first` and `second` in `directory` atomically
/// (renameat2 with RENAME_EXCHANGE, which glibc's headers declare only for _GNU_SOURCE).
/// 0, or -1 with errno set (EINVAL or ENOSYS where the file system or kernel has no
/// exchange).
int sd_exchange_names(int directory, const char *first, const char *second);

// MARK: Futexes in memory shared between processes

/// Waits while `*word == expected`, at most `timeout_ns`. Returns 0 when woken, else
/// the errno (ETIMEDOUT, EAGAIN when the word had already changed, EINTR, EFAULT).
int sd_futex_wait_shared(const uint32_t *word, uint32_t expected, int64_t timeout_ns);

/// Wakes up to `count` processes waiting on `word`.
void sd_futex_wake_shared(uint32_t *word, int count);

// MARK: Pages whose file may be cut short

/// Registers a mapped page so that a SIGBUS on it (its file was truncated under the
/// mapping) replaces it with a private zero page instead of killing the process, and
/// marks the registration. Installs the SIGBUS handler on first use, chaining to the
/// one before it. Returns a registration number, or -1 when no memory is left for one.
int sd_bus_guard_add(void *page);

/// Whether a SIGBUS replaced the page since it was registered.
int sd_bus_guard_tripped(int registration);

/// Forgets a registration (before the page is unmapped).
void sd_bus_guard_remove(int registration);

#endif
