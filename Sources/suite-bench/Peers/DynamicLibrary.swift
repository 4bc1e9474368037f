import Glibc

/// A shared library opened with `dlopen` at run time, so that the package builds
/// without its headers and runs without it: the peers of `suite-bench --peers`.
struct DynamicLibrary: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    /// Nil when the library is not installed (or cannot be loaded).
    init?(_ soname: String) {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else { return nil }
        self.handle = handle
    }

    /// The function `name`, as the C type `T` that this program declares for it.
    func function<T>(_ name: String, as type: T.Type = T.self) throws(PeerError) -> T {
        guard let symbol = dlsym(handle, name) else { throw PeerError("\(name) is missing from the library") }
        return unsafeBitCast(symbol, to: T.self)
    }
}

/// A peer's call that failed, with its message.
struct PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
