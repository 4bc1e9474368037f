import Glibc

/// This process and its threads, as the kernel numbers them.
enum CurrentProcess {
    /// The process ID; a forked child has its own.
    static var id: Int32 { getpid() }

    /// The calling thread, as a number to compare.
    static var thread: UInt { UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))) }
}
