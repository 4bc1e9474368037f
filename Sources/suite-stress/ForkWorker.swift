import Dispatch
import Glibc
import SuiteDefaults
import ToolSupport

extension Worker {
    /// Forks --children children while another thread of this process is inside a
    /// transaction (holding the suite's locks); then every process runs --threads
    /// threads × --count increments of "counter". Says "done N" with every increment
    /// made, or "failed ..." when a child did not end cleanly.
    func runForkIncrement() {
        let suite = open(suiteName)
        let children = number("children"), threads = number("threads"), count = number("count")
        @Sendable func increment() {
            do {
                try suite.update { tx in try tx.set((tx.integer(forKey: "counter") ?? 0) + 1, forKey: "counter") }
            } catch {
                ToolError(status: 3, message: "increment: \(error)").exit()
            }
        }
        func increments() {
            let finished = DispatchSemaphore(value: 0)
            for _ in 0..<threads {
                Self.startThread {
                    for _ in 0..<count { increment() }
                    finished.signal()
                }
            }
            for _ in 0..<threads { finished.wait() }
        }
        // Everything the increments use is set up before the fork, as POSIX advises:
        // a child can rely only on what no other thread was in the middle of.
        increment()
        let inside = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0), holderDone = DispatchSemaphore(value: 0)
        Self.startThread {
            do {
                try suite.update { tx in
                    try tx.set((tx.integer(forKey: "counter") ?? 0) + 1, forKey: "counter")
                    inside.signal()
                    proceed.wait()
                }
            } catch {
                ToolError(status: 3, message: "holder: \(error)").exit()
            }
            holderDone.signal()
        }
        inside.wait()
        var pids: [pid_t] = []
        for _ in 0..<children {
            let pid = fork()
            if pid == 0 {
                // A child has only the thread that forked: the holder is not in it.
                increments()
                _exit(0)
            }
            guard pid > 0 else { ToolError(status: 3, message: "fork failed").exit() }
            pids.append(pid)
        }
        proceed.signal()
        holderDone.wait()
        increments()
        var failedChildren = 0
        for pid in pids {
            var status: Int32 = 0
            if waitpid(pid, &status, 0) != pid || status != 0 { failedChildren += 1 }
        }
        Output.line("done \((children + 1) * threads * count + 2) failed \(failedChildren)")
    }

    /// Starts `body` on a plain pthread: libdispatch does not run in a forked child,
    /// and Foundation's `Thread` may hang there on a one-time initialization that a
    /// parent's thread had begun.
    static func startThread(_ body: @escaping @Sendable () -> Void) {
        final class Box {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        let started = pthread_create(&thread, nil, { Unmanaged<Box>.fromOpaque($0!).takeRetainedValue().body(); return nil }, context)
        guard started == 0 else { ToolError(status: 3, message: "pthread_create failed").exit() }
        pthread_detach(thread)
    }
}
