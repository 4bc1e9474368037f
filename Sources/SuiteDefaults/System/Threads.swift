import CSuiteDefaults
import Glibc

/// Starts a thread with a plain `pthread_create`. Foundation's `Thread` runs a
/// one-time initialization on each start, which a forked child can find forever
/// half-done by a parent's thread; the threads of observation must start in a
/// child too.
enum Threads {
    /// `sched_yield`: lets another thread that is ready on this processor run first
    /// (a lock holder that the caller's wake-up preempted, say).
    static func yieldProcessor() { sched_yield() }

    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(_ name: String, _ run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Starts a thread running `run`, named `name`; the error number when none could be
    /// started (`EAGAIN` at the process's limit of threads), nil when it was.
    static func tryStart(name: String, _ run: @escaping @Sendable () -> Void) -> CInt? {
        let context = Unmanaged.passRetained(Body(name, run)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
            sd_name_current_thread(body.name)
            body.run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return result
        }
        pthread_detach(thread)
        return nil
    }
}
