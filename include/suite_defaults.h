/*
 * suite_defaults.h: the C interface of suite-defaults (libsuitedefaults.so.1).
 *
 * A suite is a named key-value store in a file that many processes share: a main
 * app and its widgets, in Swift, C or Python. Every write is atomic and survives the
 * crash of any process; every read sees every write that returned before it started,
 * in any process. This interface is a thin layer over the Swift library, with the
 * same guarantees; Docs/C-API.md in the package has a complete example.
 *
 *     sd_suite *suite;
 *     if (sd_suite_open("group.com.example.fitness", NULL, 0, &suite) != SD_OK) {
 *         fprintf(stderr, "%s\n", sd_last_error_message());
 *         return 1;
 *     }
 *     sd_set_string(suite, "units.system", "imperial");
 *     char units[16];
 *     if (sd_get_string(suite, "units.system", units, sizeof units, NULL) == SD_OK) puts(units);
 *     sd_suite_close(suite);
 *
 * Build with `cc app.c $(pkg-config --cflags --libs suitedefaults)`. C99.
 *
 * Conventions, for every function below unless it says otherwise:
 *
 * - It returns an sd_status: SD_OK, or why it did nothing. A failed call has changed
 *   nothing stored, and has written none of its out-parameters.
 * - Bad input is a status, never a crash: a NULL pointer where one is needed
 *   (SD_INVALID_ARGUMENT), a handle that was closed or never was (SD_INVALID_HANDLE),
 *   a name, key or string that is not UTF-8 (SD_INVALID_SUITE_NAME, SD_INVALID_KEY,
 *   SD_INVALID_VALUE). Pointers must otherwise point to what they say: a
 *   NUL-terminated string, or `length` readable bytes.
 * - Strings are NUL-terminated UTF-8. Names and keys are compared in Unicode NFC.
 * - Memory the library allocates (the *_alloc getters, sd_set_if_absent_* results)
 *   is freed with sd_free. Memory the caller passes stays the caller's.
 * - Every function may be called from any thread. Handles may be shared between
 *   threads; an sd_tx handle only inside its callback, on the callback's thread.
 * - When a call fails, sd_last_error_message() says why, in the calling thread.
 */
#ifndef SUITE_DEFAULTS_H
#define SUITE_DEFAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version: the library's soname is libsuitedefaults.so.1. */
#define SD_ABI_VERSION 1

/* MARK: Status */

/*
 * What a call did. 0 is success; 1 and 2 are answers, not failures; the rest are
 * failures, with sd_last_error_message() saying what to do. SD_INVALID_SUITE_NAME to
 * SD_IO_FAILURE mirror the Swift library's SuiteError.Code, in its order.
 */
typedef int32_t sd_status;
enum {
    SD_OK = 0,
    /* The key has no value (getters); nothing stored, nothing changed. */
    SD_ABSENT = 1,
    /* sd_watch_next: no change is waiting. */
    SD_NO_CHANGE = 2,

    /* A NULL pointer where one is needed, an unknown flag, a count without its
       array, or a suite (or a watch of it closed) inside its own sd_update callback
       (use the sd_tx). */
    SD_INVALID_ARGUMENT = 3,
    /* A handle that is closed or never was, or an sd_tx used outside its callback
       or on another thread. */
    SD_INVALID_HANDLE = 4,
    /* The value does not fit the caller's buffer; *length says how long it is. */
    SD_BUFFER_TOO_SMALL = 5,
    /* The library could not allocate memory. */
    SD_OUT_OF_MEMORY = 6,

    /* The suite name is empty, too long (224 bytes), not UTF-8, or contains "/",
       "..", NUL, a control character, or starts with ".". */
    SD_INVALID_SUITE_NAME = 10,
    /* The key is empty, longer than 1024 bytes, or not UTF-8. */
    SD_INVALID_KEY = 11,
    /* The value cannot be stored: a NaN or infinite double, a string that is not
       UTF-8, JSON text that is not valid typed JSON, or nesting that is too deep. */
    SD_INVALID_VALUE = 12,
    /* The encoded value is larger than the suite's limit (4 MiB). */
    SD_VALUE_TOO_LARGE = 13,
    /* The write would make the suite larger than its limit (16 MiB). */
    SD_SUITE_TOO_LARGE = 14,
    /* The stored value is not of the type asked for. */
    SD_TYPE_MISMATCH = 15,
    /* The value could not be encoded. */
    SD_ENCODING_FAILED = 16,
    /* The suite file is another format's; it was left untouched. */
    SD_FOREIGN_FILE = 17,
    /* The suite file was written by a newer, incompatible version of the library. */
    SD_UNSUPPORTED_VERSION = 18,
    /* The suite file is damaged beyond repair. */
    SD_CORRUPT_FILE = 19,
    /* A symbolic link stands where a suite file or its lock should be. */
    SD_SYMBOLIC_LINK = 20,
    /* The directory or a suite file belongs to another user, or others may write it. */
    SD_FOREIGN_OWNER = 21,
    /* The operating system refused access (EACCES, EPERM). */
    SD_PERMISSION_DENIED = 22,
    /* The file system is read-only. */
    SD_READ_ONLY = 23,
    /* The disk or quota is full, or the file size limit was reached. */
    SD_NO_SPACE = 24,
    /* The suite's directory does not exist, or a path in it is missing. */
    SD_NOT_FOUND = 25,
    /* Another process held the suite's lock for longer than 2 seconds. */
    SD_LOCK_TIMEOUT = 26,
    /* Any other input/output failure. */
    SD_IO_FAILURE = 27
};

/* The status's name ("SD_OK", "SD_INVALID_KEY", ...); "SD_UNKNOWN" for any other
   number. A static string: never freed, never NULL. */
const char *sd_status_name(sd_status status);

/* What the calling thread's last failed call said: what went wrong, where, and what
   to do; "" when none has failed. Calls that succeed leave it as it is. The text
   belongs to the thread and stays valid until its next sd_ call; never NULL. */
const char *sd_last_error_message(void);

/* Frees memory the library allocated for the caller. NULL does nothing. */
void sd_free(void *memory);

/* MARK: Opening a suite */

/* An open suite. Close it with sd_suite_close. */
typedef struct sd_suite sd_suite;

/* Flags for sd_suite_open; 0 for the defaults. */
enum {
    /* Writes reach the disk before they return (fdatasync), so that they survive a
       power loss, not only a crash. Slower. */
    SD_OPEN_DURABLE = 1u << 0,
    /* Files 0660 in a 2770 directory, for processes of several users in one group;
       the default is files 0600 in a 0700 directory. */
    SD_OPEN_GROUP = 1u << 1
};

/*
 * Opens the suite `name` in `directory`, creating the directory when missing; the
 * suite's files are created on its first write. `directory` NULL means the default:
 * $SUITE_DEFAULTS_DIR, else $XDG_CONFIG_HOME/suite-defaults, else
 * ~/.config/suite-defaults. On success *suite is a new handle.
 */
sd_status sd_suite_open(const char *name, const char *directory, uint32_t flags, sd_suite **suite);

/* Closes the handle; watches opened from it go on until they are closed. NULL does
   nothing (SD_OK). */
sd_status sd_suite_close(sd_suite *suite);

/* MARK: Reading */

/*
 * Reads the value stored for `key`. SD_ABSENT when none is; SD_TYPE_MISMATCH when
 * it is of another type. sd_get_int64 also reads a double that holds an integer
 * exactly; sd_get_double reads any number.
 */
sd_status sd_get_int64(sd_suite *suite, const char *key, int64_t *value);
sd_status sd_get_double(sd_suite *suite, const char *key, double *value);
sd_status sd_get_bool(sd_suite *suite, const char *key, bool *value);

/*
 * Reads a string, bytes, or any value as typed JSON, into the caller's buffer.
 * *length (if length is not NULL) receives the value's length in bytes, without the
 * NUL that strings and JSON get after it. SD_BUFFER_TOO_SMALL when the value and its
 * NUL do not fit in `capacity` bytes: *length says how many are needed (plus 1 for
 * the NUL), and a string buffer holds "". `buffer` may be NULL when `capacity` is 0,
 * to ask for the length. A string written by another language may contain NUL:
 * *length is then the whole length.
 *
 * sd_get_json returns any value as typed JSON, which sd_set_json reads back to the
 * same type and bytes: "text", 42, 2.5, true, [..], {..}, and tagged objects for
 * what JSON has no type of: {"$data": "base64"}, {"$date": "2026-11-22T10:15:00Z"},
 * {"$json": <JSON text stored by a Codable value>}. Docs/C-API.md lists the rules.
 */
sd_status sd_get_string(sd_suite *suite, const char *key, char *buffer, size_t capacity, size_t *length);
sd_status sd_get_data(sd_suite *suite, const char *key, void *buffer, size_t capacity, size_t *length);
sd_status sd_get_json(sd_suite *suite, const char *key, char *buffer, size_t capacity, size_t *length);

/* The same, into memory the library allocates: *value is freed with sd_free. Strings
   and JSON are NUL-terminated; data of length 0 is a valid pointer. */
sd_status sd_get_string_alloc(sd_suite *suite, const char *key, char **value, size_t *length);
sd_status sd_get_data_alloc(sd_suite *suite, const char *key, void **value, size_t *length);
sd_status sd_get_json_alloc(sd_suite *suite, const char *key, char **value, size_t *length);

/* MARK: Writing */

/*
 * Stores a value for `key`, replacing what was stored, as one atomic commit.
 * sd_set_data: `bytes` may be NULL when `length` is 0. sd_set_json: typed JSON (see
 * sd_get_json); `null` is refused (use sd_remove).
 */
sd_status sd_set_string(sd_suite *suite, const char *key, const char *value);
sd_status sd_set_int64(sd_suite *suite, const char *key, int64_t value);
sd_status sd_set_double(sd_suite *suite, const char *key, double value);
sd_status sd_set_bool(sd_suite *suite, const char *key, bool value);
sd_status sd_set_data(sd_suite *suite, const char *key, const void *bytes, size_t length);
sd_status sd_set_json(sd_suite *suite, const char *key, const char *json);

/* Removes the value stored for `key`; removing an absent key does nothing (SD_OK). */
sd_status sd_remove(sd_suite *suite, const char *key);

/*
 * Stores the value only if nothing is stored for `key`, atomically across processes.
 * *stored (when `stored` is not NULL) receives the value stored after the call: the
 * one that was there, or this one. SD_TYPE_MISMATCH, changing nothing, when the
 * value there is of another type. Strings, data and JSON come in memory to free with
 * sd_free.
 */
sd_status sd_set_if_absent_string(sd_suite *suite, const char *key, const char *value, char **stored);
sd_status sd_set_if_absent_int64(sd_suite *suite, const char *key, int64_t value, int64_t *stored);
sd_status sd_set_if_absent_double(sd_suite *suite, const char *key, double value, double *stored);
sd_status sd_set_if_absent_bool(sd_suite *suite, const char *key, bool value, bool *stored);
sd_status sd_set_if_absent_data(sd_suite *suite, const char *key, const void *bytes, size_t length,
                                void **stored, size_t *stored_length);
sd_status sd_set_if_absent_json(sd_suite *suite, const char *key, const char *json, char **stored);

/*
 * Stores `new_json` (removes the key when NULL) only if the stored value is
 * `expected_json` (NULL: nothing stored), atomically across processes. Values are
 * typed JSON and compare as stored, byte for byte: 1 never equals 1.0. *replaced
 * (when not NULL) says whether the value was replaced.
 */
sd_status sd_compare_and_set(sd_suite *suite, const char *key, const char *expected_json, const char *new_json,
                             bool *replaced);

/* MARK: Transactions */

/* A transaction: valid only inside the sd_update callback it was passed to, on the
   callback's thread. Afterwards every call with it returns SD_INVALID_HANDLE. */
typedef struct sd_tx sd_tx;

/* An sd_update callback: reads and writes through `tx`. Returning SD_OK commits what
   it wrote; anything else commits nothing, and sd_update returns that value. */
typedef sd_status (*sd_update_fn)(sd_tx *tx, void *context);

/*
 * Runs `callback(tx, context)` once, under the suite's exclusive lock, in the
 * calling thread: its reads see the latest committed state and its own writes, and
 * its writes commit together when it returns SD_OK, or not at all. Every other
 * writer, in every process, waits for it: keep it short, and do not use `suite`
 * (or another handle of the same suite) inside it, which is refused with
 * SD_INVALID_ARGUMENT. The callback must return normally (no longjmp out of it).
 *
 *     static sd_status increment(sd_tx *tx, void *context) {
 *         int64_t count = 0;
 *         sd_status status = sd_tx_get_int64(tx, "count", &count);
 *         if (status != SD_OK && status != SD_ABSENT) return status;
 *         return sd_tx_set_int64(tx, "count", count + 1);
 *     }
 *     sd_update(suite, increment, NULL);
 */
sd_status sd_update(sd_suite *suite, sd_update_fn callback, void *context);

/* The getters and setters of a suite, through a transaction: the same rules. */
sd_status sd_tx_get_int64(sd_tx *tx, const char *key, int64_t *value);
sd_status sd_tx_get_double(sd_tx *tx, const char *key, double *value);
sd_status sd_tx_get_bool(sd_tx *tx, const char *key, bool *value);
sd_status sd_tx_get_string(sd_tx *tx, const char *key, char *buffer, size_t capacity, size_t *length);
sd_status sd_tx_get_data(sd_tx *tx, const char *key, void *buffer, size_t capacity, size_t *length);
sd_status sd_tx_get_json(sd_tx *tx, const char *key, char *buffer, size_t capacity, size_t *length);
sd_status sd_tx_get_string_alloc(sd_tx *tx, const char *key, char **value, size_t *length);
sd_status sd_tx_get_data_alloc(sd_tx *tx, const char *key, void **value, size_t *length);
sd_status sd_tx_get_json_alloc(sd_tx *tx, const char *key, char **value, size_t *length);
sd_status sd_tx_set_string(sd_tx *tx, const char *key, const char *value);
sd_status sd_tx_set_int64(sd_tx *tx, const char *key, int64_t value);
sd_status sd_tx_set_double(sd_tx *tx, const char *key, double value);
sd_status sd_tx_set_bool(sd_tx *tx, const char *key, bool value);
sd_status sd_tx_set_data(sd_tx *tx, const char *key, const void *bytes, size_t length);
sd_status sd_tx_set_json(sd_tx *tx, const char *key, const char *json);
sd_status sd_tx_remove(sd_tx *tx, const char *key);

/* MARK: Watching for changes */

/* A watch: the changes of some keys of a suite, from every process, in commit order. */
typedef struct sd_watch sd_watch;

/* Where a change comes from (sd_change.kind). */
enum {
    /* One commit: sequence and pid are the commit's. */
    SD_CHANGE_COMMIT = 0,
    /* The net change since the state the watch saw last, after damage was repaired or
       when the watch fell far behind: intermediate values may be folded. */
    SD_CHANGE_NET = 1
};

/* One key's change. Its strings belong to the watch and stay valid until the next
   sd_watch_next or sd_watch_close of that watch. */
typedef struct sd_change {
    /* The key. */
    const char *key;
    /* The value before and after, as typed JSON (see sd_get_json); NULL when absent
       before (old_json) or removed (new_json). */
    const char *old_json;
    const char *new_json;
    /* The commit's sequence number, increasing by commit. */
    uint64_t sequence;
    /* The process that wrote it; 0 when unknown (net changes). */
    int32_t pid;
    /* SD_CHANGE_COMMIT or SD_CHANGE_NET. */
    int32_t kind;
    /* Whether this process wrote it. */
    bool from_this_process;
} sd_change;

/*
 * Starts watching `keys[0..count-1]` of the suite (every key when `keys` is NULL and
 * `count` is 0). Changes committed from now on, by any process, this one included,
 * are queued in the watch until sd_watch_next takes them; none is dropped. On
 * success *watch is a new handle.
 */
sd_status sd_watch_open(sd_suite *suite, const char *const *keys, size_t count, sd_watch **watch);

/*
 * A descriptor that is readable (POLLIN, EPOLLIN) while changes are waiting: for
 * poll, epoll, a GLib or libuv loop. Only watch it; do not read or close it. -1 for a
 * handle that is not a watch's (sd_last_error_message says why).
 */
int sd_watch_fd(sd_watch *watch);

/*
 * Takes the next change without waiting: SD_OK with *change filled in, or
 * SD_NO_CHANGE when none is waiting. When a failure keeps changes from arriving (the
 * suite's file unreadable, its directory removed), the failure comes in order, as its
 * status (SD_IO_FAILURE, SD_NOT_FOUND, ...) with its message, and the watch goes on:
 * changes come again once the cause is gone.
 */
sd_status sd_watch_next(sd_watch *watch, sd_change *change);

/* Stops the watch and frees it; its descriptor is closed. NULL does nothing (SD_OK).
   Inside an sd_update callback of the watched suite, it is refused with
   SD_INVALID_ARGUMENT (stopping takes the lock the callback holds): close it after. */
sd_status sd_watch_close(sd_watch *watch);

#ifdef __cplusplus
}
#endif

#endif /* SUITE_DEFAULTS_H */
