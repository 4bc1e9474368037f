#ifndef SUITE_DEFAULTS_INTERNAL_H
#define SUITE_DEFAULTS_INTERNAL_H

#include <stddef.h>

// What the Swift side of the C interface needs beyond the public header: never
// exported from libsuitedefaults.so (Sources/SuiteDefaultsC/exports.map).

/// The most bytes a last-error message keeps, its terminating NUL included.
#define SD_LAST_ERROR_CAPACITY 1024

/// Stores `length` bytes of UTF-8 at `text` as the calling thread's last error
/// message (what `sd_last_error_message()` returns), cut at a character boundary to
/// fit. `text` may be NULL when `length` is 0.
void sd_last_error_store(const char *text, size_t length);

// MARK: A watch's descriptor (an eventfd: readable while its count is not 0)

/// A new eventfd, non-blocking and close-on-exec; -1 with errno set on failure.
int sd_event_make(void);
/// Makes the descriptor readable.
void sd_event_signal(int descriptor);
/// Makes it unreadable until the next signal.
void sd_event_reset(int descriptor);

#endif
