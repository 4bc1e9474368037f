#define _GNU_SOURCE
#include "CSuiteDefaults.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

// What the library reads of a file's status, and only that: never its times. Since
// Linux 6.13, on file systems with multigrain timestamps (ext4, xfs, btrfs, tmpfs), a
// stat that reports a file's change time marks the time as seen, and the next write to
// the file then stamps it with a fine-grained time and dirties its inode (on ext4, a
// journal handle). A commit checks its data file just before it appends to it, so an
// fstat there made every append pay that. statx asked for fewer fields does not.
static const unsigned int sd_status_mask =
    STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | STATX_INO | STATX_SIZE | STATX_BLOCKS;

// Set once statx is found missing (a kernel before 4.11, or a seccomp filter that
// refuses it), after which every call is fstatat's.
static int sd_statx_missing = 0;

static void sd_status_from_stat(const struct stat *raw, sd_file_status *status) {
    status->device = (uint64_t)raw->st_dev;
    status->inode = (uint64_t)raw->st_ino;
    status->mode = (uint32_t)raw->st_mode;
    status->owner = (uint32_t)raw->st_uid;
    status->group = (uint32_t)raw->st_gid;
    status->size = (int64_t)raw->st_size;
    status->link_count = (uint64_t)raw->st_nlink;
    status->blocks = (int64_t)raw->st_blocks;
}

static int sd_status_by_fstatat(int directory, const char *path, int flags, sd_file_status *status) {
    struct stat raw;
    if (fstatat(directory, path, &raw, flags) != 0) return -1;
    sd_status_from_stat(&raw, status);
    return 0;
}

// One statx; 1 when it answered every field asked for (then in `status`), 0 when it
// answered without some (a file system that leaves one out), -1 with errno otherwise.
static int sd_statx(int directory, const char *path, int flags, sd_file_status *status) {
    struct statx raw;
    // The system call itself, not glibc's statx: a glibc built for kernels before
    // statx answers its ENOSYS with its own fstatat, which asks for the times.
    if (syscall(SYS_statx, directory, path, flags, sd_status_mask, &raw) != 0) return -1;
    if ((raw.stx_mask & sd_status_mask) != sd_status_mask) return 0;
    status->device = (uint64_t)makedev(raw.stx_dev_major, raw.stx_dev_minor);
    status->inode = raw.stx_ino;
    status->mode = raw.stx_mode;
    status->owner = raw.stx_uid;
    status->group = raw.stx_gid;
    status->size = (int64_t)raw.stx_size;
    status->link_count = raw.stx_nlink;
    status->blocks = (int64_t)raw.stx_blocks;
    return 1;
}

int sd_read_file_status(int directory, const char *path, int flags, sd_file_status *status) {
    if (!__atomic_load_n(&sd_statx_missing, __ATOMIC_RELAXED)) {
        int answered = sd_statx(directory, path, flags, status);
        if (answered == 1) return 0;
        // A file system that leaves out a field asked for gets the full stat.
        if (answered == 0) return sd_status_by_fstatat(directory, path, flags, status);
        if (errno != ENOSYS && errno != EPERM) return -1;
        // EPERM is what a seccomp filter answers for a call it does not know; statx
        // itself never answers it. Taken as missing only when fstatat then succeeds.
        if (sd_status_by_fstatat(directory, path, flags, status) != 0) return -1;
        __atomic_store_n(&sd_statx_missing, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return sd_status_by_fstatat(directory, path, flags, status);
}

// Set once the NULL path is refused (EFAULT before Linux 6.11; ENOSYS or EPERM from a
// seccomp filter that looks at the path), after which a descriptor's status is asked
// for with an empty path, which is what decides whether statx is missing.
static int sd_null_path_refused = 0;

int sd_read_descriptor_status(int descriptor, sd_file_status *status) {
    // Since Linux 6.11, statx takes a NULL path with AT_EMPTY_PATH and then skips
    // copying and checking a path string: a tenth of the call, twice per commit.
    if (!__atomic_load_n(&sd_null_path_refused, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&sd_statx_missing, __ATOMIC_RELAXED)) {
        int answered = sd_statx(descriptor, NULL, AT_EMPTY_PATH, status);
        if (answered == 1) return 0;
        if (answered == 0) return sd_status_by_fstatat(descriptor, "", AT_EMPTY_PATH, status);
        if (errno != EFAULT && errno != ENOSYS && errno != EPERM) return -1;
        __atomic_store_n(&sd_null_path_refused, 1, __ATOMIC_RELAXED);
    }
    return sd_read_file_status(descriptor, "", AT_EMPTY_PATH, status);
}

int sd_exchange_names(int directory, const char *first, const char *second) {
    return (int)syscall(SYS_renameat2, directory, first, directory, second, RENAME_EXCHANGE);
}
