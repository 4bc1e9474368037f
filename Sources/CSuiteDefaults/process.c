#define _GNU_SOURCE
#include "CSuiteDefaults.h"

#include <errno.h>
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

static void sd_count_fork_in_child(void) {
    __atomic_add_fetch(&sd_fork_epoch_storage, 1, __ATOMIC_RELAXED);
}

static pthread_once_t fork_handler_once = PTHREAD_ONCE_INIT;

static void sd_register_fork_handler(void) {
    pthread_atfork(NULL, NULL, sd_count_fork_in_child);
}

void sd_fork_epoch_start(void) {
    pthread_once(&fork_handler_once, sd_register_fork_handler);
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

#define SD_BUS_GUARD_SLOTS 4096

static struct {
    uintptr_t page;
    int tripped;
} bus_guards[SD_BUS_GUARD_SLOTS];

static struct sigaction previous_bus_action;
static pthread_once_t bus_handler_once = PTHREAD_ONCE_INIT;

// Async-signal-safe: atomics, mmap, sigaction and raise only.
static void sd_on_bus_error(int signal, siginfo_t *info, void *context) {
    uintptr_t size = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t page = (uintptr_t)info->si_addr & ~(size - 1);
    if (page != 0) {
        for (int slot = 0; slot < SD_BUS_GUARD_SLOTS; slot++) {
            if (__atomic_load_n(&bus_guards[slot].page, __ATOMIC_ACQUIRE) != page) continue;
            // The file under the page was cut short. A private zero page reads as an
            // invalid header, which sends the process to its slow path, where it sees
            // the mark and maps the file again.
            void *replaced = mmap((void *)page, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (replaced != MAP_FAILED) {
                __atomic_store_n(&bus_guards[slot].tripped, 1, __ATOMIC_RELEASE);
                return;
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

int sd_bus_guard_add(void *page) {
    pthread_once(&bus_handler_once, sd_install_bus_handler);
    for (int slot = 0; slot < SD_BUS_GUARD_SLOTS; slot++) {
        uintptr_t expected = 0;
        if (__atomic_compare_exchange_n(&bus_guards[slot].page, &expected, (uintptr_t)page, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            __atomic_store_n(&bus_guards[slot].tripped, 0, __ATOMIC_RELEASE);
            return slot;
        }
    }
    return -1;
}

int sd_bus_guard_tripped(int registration) {
    if (registration < 0 || registration >= SD_BUS_GUARD_SLOTS) return 0;
    return __atomic_load_n(&bus_guards[registration].tripped, __ATOMIC_ACQUIRE);
}

void sd_bus_guard_remove(int registration) {
    if (registration < 0 || registration >= SD_BUS_GUARD_SLOTS) return;
    __atomic_store_n(&bus_guards[registration].tripped, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&bus_guards[registration].page, 0, __ATOMIC_RELEASE);
}
