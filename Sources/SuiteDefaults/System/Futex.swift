import CSuiteDefaults
import Glibc

/// Waiting on, and waking, a 32-bit word in memory shared between processes.
enum SharedFutex {
    enum Outcome { case woken, changed, timedOut, unsupported }

    /// Waits while `word` holds `expected`, for at most `timeout`.
    static func wait(on word: UnsafePointer<UInt32>, whileEqualTo expected: UInt32, timeout: Duration) -> Outcome {
        switch sd_futex_wait_shared(word, expected, max(0, timeout.wholeNanoseconds)) {
        case 0, EINTR: return .woken
        case EAGAIN: return .changed
        case ETIMEDOUT: return .timedOut
        default: return .unsupported
        }
    }

    static func wake(_ word: UnsafeMutablePointer<UInt32>, count: Int32 = 1) {
        sd_futex_wake_shared(word, count)
    }
}
