@_spi(Tools) import SuiteDefaults

extension DynamicLibrary {
    /// The function `name`, as the C type `T` that this program declares for it, or a
    /// peer's error saying it is missing.
    func function<T>(_ name: String, as type: T.Type = T.self) throws(PeerError) -> T {
        guard let function = symbol(name, as: T.self) else { throw PeerError("\(name) is missing from the library") }
        return function
    }
}

/// A peer's call that failed, with its message.
struct PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
