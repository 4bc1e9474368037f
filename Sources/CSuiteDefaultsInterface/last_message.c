#include "suite_defaults.h"
#include "suite_defaults_internal.h"

#include <string.h>

// The message of the last failed call of the C interface, one per thread. A fixed
// buffer: nothing to allocate, nothing to free when the thread ends.
static _Thread_local char sd_last_error[SD_LAST_ERROR_CAPACITY];

void sd_last_error_store(const char *text, size_t length) {
    if (text == NULL) length = 0;
    if (length >= SD_LAST_ERROR_CAPACITY) {
        // Cut at a character boundary: back over UTF-8 continuation bytes (10xxxxxx).
        length = SD_LAST_ERROR_CAPACITY - 1;
        while (length > 0 && ((unsigned char)text[length] & 0xC0) == 0x80) length--;
    }
    if (length > 0) memcpy(sd_last_error, text, length);
    sd_last_error[length] = '\0';
}

const char *sd_last_error_message(void) {
    return sd_last_error;
}
