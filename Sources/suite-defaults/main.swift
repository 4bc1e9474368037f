// suite-defaults: read and write suites from the command line, like macOS `defaults`.
import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
import ToolSupport

// Past RLIMIT_FSIZE (ulimit -f) a write would kill the process with SIGXFSZ; ignored,
// the write fails with EFBIG, which the library cuts back and reports as `.noSpace`.
signal(SIGXFSZ, SIG_IGN)

do {
    try run(try Invocation(syntax.parseCommandLine()))
} catch {
    ToolError(error).exit()
}
