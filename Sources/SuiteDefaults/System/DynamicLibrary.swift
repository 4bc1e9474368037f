import Glibc

/// A shared library opened with `dlopen` at run time, so that the package builds
/// without its headers and runs without it: libssl for `suite-sync`'s TLS, and the
/// peers of `suite-bench --peers`. The library stays loaded for the process's life.
package struct DynamicLibrary: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer

    /// The first of `sonames` that loads (`RTLD_NOW | RTLD_LOCAL`); nil when none is
    /// installed, or none can be loaded.
    package init?(_ sonames: String...) {
        guard let handle = sonames.lazy.compactMap({ dlopen($0, RTLD_NOW | RTLD_LOCAL) }).first else { return nil }
        self.handle = handle
    }

    /// The function `name` (found also in the libraries this one depends on), as the C
    /// type `T` that the caller declares for it; nil when there is none.
    package func symbol<T>(_ name: String, as type: T.Type = T.self) -> T? {
        dlsym(handle, name).map { unsafeBitCast($0, to: T.self) }
    }
}
