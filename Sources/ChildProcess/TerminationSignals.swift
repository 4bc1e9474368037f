import Foundation
import Glibc

/// The write end of the pipe the signal handler writes to; set once, before the
/// handler is installed.
nonisolated(unsafe) private var terminationPipe: Int32 = -1

/// Clean termination for long-running programs (watchers, widgets): SIGINT and SIGTERM
/// call a handler on an ordinary thread instead of killing the process.
///
/// A sigaction(2) handler, installed at once and valid in every thread, writes the
/// signal's number to a pipe (write(2) is safe in a signal handler); a thread reads
/// the pipe and calls the handler. Neither a thread that started earlier nor the
/// moment of the signal can lose it.
public enum TerminationSignals {
    public static func handle(_ handler: @escaping @Sendable (Int32) -> Void) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        terminationPipe = ends[1]
        let readEnd = ends[0]
        Thread {
            var received: Int32 = 0
            while read(readEnd, &received, MemoryLayout<Int32>.size) != MemoryLayout<Int32>.size {}
            handler(received)
        }.start()
        for signalNumber in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { signalNumber in
                var number = signalNumber
                _ = write(terminationPipe, &number, MemoryLayout<Int32>.size)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(signalNumber, &action, nil)
        }
    }
}
