#define _GNU_SOURCE
#include "CSuiteDefaults.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// MARK: fork

uint32_t sd_fork_epoch_storage = 0;

// MARK: Lock descriptors a child must not keep

#define SD_HELD_SLOTS 4096

static int held_descriptors[SD_HELD_SLOTS];

int sd_lock_descriptor_add(int descriptor) {
    for (int slot = 0; slot < SD_HELD_SLOTS; slot++) {
        int expected = 0;
        // 0 is free: slots hold the descriptor plus one.
        if (__atomic_compare_exchange_n(&held_descriptors[slot], &expected, descriptor + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            return slot;
        }
    }
    return -1;
}

void sd_lock_descriptor_remove(int registration) {
    if (registration < 0 || registration >= SD_HELD_SLOTS) return;
    __atomic_store_n(&held_descriptors[registration], 0, __ATOMIC_RELEASE);
}

// In the child, between fork and its return: only async-signal-safe calls. A lock
// descriptor the child inherited shares its open file description, and with it any
// flock, with the parent: kept open, it would keep the parent's lock alive after the
// parent died. /dev/null takes its number, so that nothing else can, and the child's
// own use of the suite opens the lock file again. The shared header's mapping holds
// the same open file description, so it goes too (see below).
static void sd_unmap_shared_pages_in_child(void);

// 0 until first asked for, and again in a forked child.
static pid_t cached_process_id = 0;

static void sd_count_fork_in_child(void) {
    __atomic_add_fetch(&sd_fork_epoch_storage, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&cached_process_id, 0, __ATOMIC_RELAXED);
    sd_unmap_shared_pages_in_child();
    int null = -1;
    for (int slot = 0; slot < SD_HELD_SLOTS; slot++) {
        int held = __atomic_load_n(&held_descriptors[slot], __ATOMIC_ACQUIRE);
        if (held == 0) continue;
        if (null < 0) null = open("/dev/null", O_RDWR | O_CLOEXEC);
        // The slot stays taken: the state that owns the number closes it later.
        if (null >= 0) dup3(null, held - 1, O_CLOEXEC);
    }
    if (null >= 0) close(null);
}

static pthread_once_t fork_handler_once = PTHREAD_ONCE_INIT;

static void sd_register_fork_handler(void) {
    pthread_atfork(NULL, NULL, sd_count_fork_in_child);
}

void sd_fork_epoch_start(void) {
    pthread_once(&fork_handler_once, sd_register_fork_handler);
}

int32_t sd_process_id(void) {
    pid_t pid = __atomic_load_n(&cached_process_id, __ATOMIC_RELAXED);
    if (pid != 0) return pid;
    // The fork handler, which forgets the number in a child, is in place before the
    // number is kept.
    sd_fork_epoch_start();
    pid = getpid();
    __atomic_store_n(&cached_process_id, pid, __ATOMIC_RELAXED);
    return pid;
}

void sd_name_current_thread(const char *name) {
    pthread_setname_np(pthread_self(), name);
}

// MARK: The thread lock's slow paths

void sd_thread_lock_wait(sd_thread_lock *lock, uint32_t epoch) {
    uint32_t held = epoch << 2 | 1, contended = epoch << 2 | 2;
    uint32_t seen = __atomic_load_n(&lock->word, __ATOMIC_RELAXED);
    for (;;) {
        if ((seen >> 2) != epoch || (seen & 3) == 0) {
            // Free (or a parent's): take it, marked contended, since others may wait.
            if (__atomic_compare_exchange_n(&lock->word, &seen, contended, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
            continue;
        }
        if (seen == held) {
            if (!__atomic_compare_exchange_n(&lock->word, &seen, contended, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) continue;
            seen = contended;
        }
        syscall(SYS_futex, &lock->word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
        seen = __atomic_load_n(&lock->word, __ATOMIC_RELAXED);
    }
}

void sd_thread_lock_wake(sd_thread_lock *lock) {
    syscall(SYS_futex, &lock->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

// MARK: Shared futexes

int sd_futex_wait_shared(const uint32_t *word, uint32_t expected, int64_t timeout_ns) {
    if (timeout_ns < 0) timeout_ns = 0;
    struct timespec timeout = { .tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000 };
    // Not FUTEX_PRIVATE_FLAG: the word is in a file mapping shared with other processes.
    long result = syscall(SYS_futex, word, FUTEX_WAIT, expected, &timeout, NULL, 0);
    return result == 0 ? 0 : errno;
}

void sd_futex_wake_shared(uint32_t *word, int count) {
    syscall(SYS_futex, word, FUTEX_WAKE, count, NULL, NULL, 0);
}

// MARK: The SIGBUS guard

// Slots in chunks: the first is static, more are mapped as needed and never freed,
// so that the handler can walk them without a lock.
#define SD_BUS_GUARD_CHUNK 1024

struct bus_guard_chunk {
    struct {
        uintptr_t page;
        int tripped;
    } slots[SD_BUS_GUARD_CHUNK];
    struct bus_guard_chunk *next;
};

static struct bus_guard_chunk first_bus_guards;

static struct sigaction previous_bus_action;
static pthread_once_t bus_handler_once = PTHREAD_ONCE_INIT;

// Async-signal-safe: atomics, mmap, sigaction and raise only.
static void sd_on_bus_error(int signal, siginfo_t *info, void *context) {
    uintptr_t size = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t page = (uintptr_t)info->si_addr & ~(size - 1);
    if (page != 0) {
        for (struct bus_guard_chunk *chunk = &first_bus_guards; chunk != NULL; chunk = __atomic_load_n(&chunk->next, __ATOMIC_ACQUIRE)) {
            for (int slot = 0; slot < SD_BUS_GUARD_CHUNK; slot++) {
                if (__atomic_load_n(&chunk->slots[slot].page, __ATOMIC_ACQUIRE) != page) continue;
                // The file under the page was cut short. A private zero page reads as an
                // invalid header, which sends the process to its slow path, where it sees
                // the mark and maps the file again.
                void *replaced = mmap((void *)page, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (replaced != MAP_FAILED) {
                    __atomic_store_n(&chunk->slots[slot].tripped, 1, __ATOMIC_RELEASE);
                    return;
                }
            }
        }
    }
    // Not ours: whatever was there before us decides.
    if (previous_bus_action.sa_flags & SA_SIGINFO) {
        if (previous_bus_action.sa_sigaction != NULL) {
            previous_bus_action.sa_sigaction(signal, info, context);
            return;
        }
    } else if (previous_bus_action.sa_handler != SIG_DFL && previous_bus_action.sa_handler != SIG_IGN) {
        previous_bus_action.sa_handler(signal);
        return;
    }
    // The default action: die of the signal, as if no handler had been installed.
    struct sigaction standard;
    memset(&standard, 0, sizeof standard);
    standard.sa_handler = SIG_DFL;
    sigaction(signal, &standard, NULL);
    raise(signal);
}

static void sd_install_bus_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = sd_on_bus_error;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous_bus_action);
}

// The child's copies of the mapped header pages keep the lock file's open file
// description, and its flock, alive as a descriptor does. A private zero page takes
// each one's place (the address stays reserved for the state that unmaps it; zeros
// read as an uninitialized header, which sends any use of it to the slow path).
static void sd_unmap_shared_pages_in_child(void) {
    uintptr_t size = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (struct bus_guard_chunk *chunk = &first_bus_guards; chunk != NULL; chunk = __atomic_load_n(&chunk->next, __ATOMIC_ACQUIRE)) {
        for (int slot = 0; slot < SD_BUS_GUARD_CHUNK; slot++) {
            uintptr_t page = __atomic_load_n(&chunk->slots[slot].page, __ATOMIC_ACQUIRE);
            if (page != 0) mmap((void *)page, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        }
    }
}

static struct bus_guard_chunk *bus_guard_chunk(int number) {
    struct bus_guard_chunk *chunk = &first_bus_guards;
    while (chunk != NULL && number-- > 0) chunk = __atomic_load_n(&chunk->next, __ATOMIC_ACQUIRE);
    return chunk;
}

int sd_bus_guard_add(void *page) {
    pthread_once(&bus_handler_once, sd_install_bus_handler);
    int number = 0;
    for (struct bus_guard_chunk *chunk = &first_bus_guards;; number++) {
        for (int slot = 0; slot < SD_BUS_GUARD_CHUNK; slot++) {
            uintptr_t expected = 0;
            if (__atomic_compare_exchange_n(&chunk->slots[slot].page, &expected, (uintptr_t)page, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                __atomic_store_n(&chunk->slots[slot].tripped, 0, __ATOMIC_RELEASE);
                return number * SD_BUS_GUARD_CHUNK + slot;
            }
        }
        struct bus_guard_chunk *next = __atomic_load_n(&chunk->next, __ATOMIC_ACQUIRE);
        if (next == NULL) {
            void *made = mmap(NULL, sizeof(struct bus_guard_chunk), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (made == MAP_FAILED) return -1;
            struct bus_guard_chunk *expected = NULL;
            if (__atomic_compare_exchange_n(&chunk->next, &expected, (struct bus_guard_chunk *)made, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                next = made;
            } else {
                munmap(made, sizeof(struct bus_guard_chunk));
                next = expected;
            }
        }
        chunk = next;
    }
}

int sd_bus_guard_tripped(int registration) {
    if (registration < 0) return 0;
    struct bus_guard_chunk *chunk = bus_guard_chunk(registration / SD_BUS_GUARD_CHUNK);
    return chunk == NULL ? 0 : __atomic_load_n(&chunk->slots[registration % SD_BUS_GUARD_CHUNK].tripped, __ATOMIC_ACQUIRE);
}

void sd_bus_guard_remove(int registration) {
    if (registration < 0) return;
    struct bus_guard_chunk *chunk = bus_guard_chunk(registration / SD_BUS_GUARD_CHUNK);
    if (chunk == NULL) return;
    __atomic_store_n(&chunk->slots[registration % SD_BUS_GUARD_CHUNK].tripped, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&chunk->slots[registration % SD_BUS_GUARD_CHUNK].page, 0, __ATOMIC_RELEASE);
}

// MARK: Measuring

size_t sd_heap_bytes_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}
