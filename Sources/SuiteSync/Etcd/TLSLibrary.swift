import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SuiteDefaults

/// OpenSSL's libssl, loaded at run time with `dlopen`, so that the package still builds
/// with nothing but the toolchain. It gives `https://` endpoints a TLS client that
/// trusts exactly the CA file it is given (`--cacert`), which URLSession on Linux cannot
/// do (see `EtcdTrust`).
///
/// Only the few functions a blocking TLS client needs are looked up; a missing library
/// or function makes `shared` nil, and https endpoints an `invalidConfiguration`.
struct TLSLibrary: @unchecked Sendable {
    // The C types are opaque pointers: SSL_METHOD*, SSL_CTX*, SSL*, X509_VERIFY_PARAM*.
    let clientMethod: @convention(c) () -> OpaquePointer?
    let newContext: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let freeContext: @convention(c) (OpaquePointer?) -> Void
    let loadVerifyLocations: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> CInt
    let setDefaultVerifyPaths: @convention(c) (OpaquePointer?) -> CInt
    let setVerify: @convention(c) (OpaquePointer?, CInt, OpaquePointer?) -> Void
    let newConnection: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let freeConnection: @convention(c) (OpaquePointer?) -> Void
    let setDescriptor: @convention(c) (OpaquePointer?, CInt) -> CInt
    let control: @convention(c) (OpaquePointer?, CInt, CLong, UnsafeMutableRawPointer?) -> CLong
    let setHost: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> CInt
    let verifyParameters: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let setIPAddress: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> CInt
    let connect: @convention(c) (OpaquePointer?) -> CInt
    let read: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, CInt) -> CInt
    let write: @convention(c) (OpaquePointer?, UnsafeRawPointer?, CInt) -> CInt
    let pending: @convention(c) (OpaquePointer?) -> CInt
    let verifyResult: @convention(c) (OpaquePointer?) -> CLong
    let clearErrors: @convention(c) () -> Void

    /// libssl, once per process; nil when it cannot be loaded.
    static let shared: TLSLibrary? = load()

    private static func load() -> TLSLibrary? {
        guard let library = DynamicLibrary("libssl.so.3", "libssl.so") else { return nil }
        // libcrypto's functions are found through libssl's handle, which depends on it.
        func symbol<T>(_ name: String, as type: T.Type) -> T? {
            library.symbol(name, as: type)
        }
        guard let clientMethod = symbol("TLS_client_method", as: (@convention(c) () -> OpaquePointer?).self),
              let newContext = symbol("SSL_CTX_new", as: (@convention(c) (OpaquePointer?) -> OpaquePointer?).self),
              let freeContext = symbol("SSL_CTX_free", as: (@convention(c) (OpaquePointer?) -> Void).self),
              let loadVerifyLocations = symbol("SSL_CTX_load_verify_locations",
                                               as: (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> CInt).self),
              let setDefaultVerifyPaths = symbol("SSL_CTX_set_default_verify_paths", as: (@convention(c) (OpaquePointer?) -> CInt).self),
              let setVerify = symbol("SSL_CTX_set_verify", as: (@convention(c) (OpaquePointer?, CInt, OpaquePointer?) -> Void).self),
              let newConnection = symbol("SSL_new", as: (@convention(c) (OpaquePointer?) -> OpaquePointer?).self),
              let freeConnection = symbol("SSL_free", as: (@convention(c) (OpaquePointer?) -> Void).self),
              let setDescriptor = symbol("SSL_set_fd", as: (@convention(c) (OpaquePointer?, CInt) -> CInt).self),
              let control = symbol("SSL_ctrl", as: (@convention(c) (OpaquePointer?, CInt, CLong, UnsafeMutableRawPointer?) -> CLong).self),
              let setHost = symbol("SSL_set1_host", as: (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> CInt).self),
              let verifyParameters = symbol("SSL_get0_param", as: (@convention(c) (OpaquePointer?) -> OpaquePointer?).self),
              let setIPAddress = symbol("X509_VERIFY_PARAM_set1_ip_asc",
                                        as: (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> CInt).self),
              let connect = symbol("SSL_connect", as: (@convention(c) (OpaquePointer?) -> CInt).self),
              let read = symbol("SSL_read", as: (@convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, CInt) -> CInt).self),
              let write = symbol("SSL_write", as: (@convention(c) (OpaquePointer?, UnsafeRawPointer?, CInt) -> CInt).self),
              let pending = symbol("SSL_pending", as: (@convention(c) (OpaquePointer?) -> CInt).self),
              let verifyResult = symbol("SSL_get_verify_result", as: (@convention(c) (OpaquePointer?) -> CLong).self),
              let clearErrors = symbol("ERR_clear_error", as: (@convention(c) () -> Void).self)
        else { return nil }
        return TLSLibrary(clientMethod: clientMethod, newContext: newContext, freeContext: freeContext,
                          loadVerifyLocations: loadVerifyLocations, setDefaultVerifyPaths: setDefaultVerifyPaths,
                          setVerify: setVerify, newConnection: newConnection, freeConnection: freeConnection,
                          setDescriptor: setDescriptor, control: control, setHost: setHost,
                          verifyParameters: verifyParameters, setIPAddress: setIPAddress, connect: connect, read: read,
                          write: write, pending: pending, verifyResult: verifyResult, clearErrors: clearErrors)
    }
}

/// A TLS client configuration: the certificate authorities to trust. Made once per client.
final class TLSContext: @unchecked Sendable {
    // SSL_CTX is safe to share between connections once configured.
    let library: TLSLibrary
    let context: OpaquePointer

    /// Trusts the certificates in `caFile`, or the system's store when nil.
    init(caFile: String?) throws(EtcdError) {
        guard let library = TLSLibrary.shared else {
            throw .invalidConfiguration("https needs OpenSSL's libssl.so.3, which is not installed (apt-get install libssl3)")
        }
        guard let context = library.newContext(library.clientMethod()) else {
            throw .invalidConfiguration("OpenSSL could not make a TLS context")
        }
        self.library = library
        self.context = context
        let loaded = if let caFile { library.loadVerifyLocations(context, caFile, nil) } else { library.setDefaultVerifyPaths(context) }
        guard loaded == 1 else {
            library.clearErrors()
            throw .invalidConfiguration("OpenSSL could not load the certificate authorities\(caFile.map { " of \($0)" } ?? "")")
        }
        library.setVerify(context, 1 /* SSL_VERIFY_PEER */, nil)
    }

    deinit {
        library.freeContext(context)
    }
}

/// One TLS connection over a connected socket: handshake with certificate and host
/// checks, then reads and writes. Blocking: the socket's timeouts bound the handshake,
/// and `shutdown` on the socket (a cancel) ends any call.
final class TLSConnection {
    private let library: TLSLibrary
    private let connection: OpaquePointer

    init(over descriptor: CInt, host: String, context: TLSContext) throws(SocketFailure) {
        library = context.library
        library.clearErrors()
        guard let connection = library.newConnection(context.context) else { throw SocketFailure(text: "TLS: no connection") }
        self.connection = connection
        _ = library.setDescriptor(connection, descriptor)
        var address = in6_addr()
        let isAddress = inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
        if isAddress {
            _ = library.setIPAddress(library.verifyParameters(connection), host)
        } else {
            _ = library.setHost(connection, host)
            // SNI: SSL_set_tlsext_host_name is the macro SSL_ctrl(s, 55, 0, name).
            _ = host.withCString { library.control(connection, 55, 0, UnsafeMutableRawPointer(mutating: $0)) }
        }
        guard library.connect(connection) == 1 else {
            let verification = library.verifyResult(connection)
            library.clearErrors()
            throw SocketFailure(text: verification != 0 ? "TLS: the server's certificate was not trusted (X509 error \(verification)); check --cacert"
                                                        : "TLS handshake failed")
        }
    }

    deinit {
        library.freeConnection(connection)
    }

    /// Bytes already decrypted and waiting, which `poll` on the socket cannot see.
    var hasPendingBytes: Bool { library.pending(connection) > 0 }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = library.read(connection, buffer.baseAddress, CInt(min(buffer.count, Int(CInt.max))))
        if count <= 0 { library.clearErrors() }
        return Int(count)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        let count = library.write(connection, bytes.baseAddress, CInt(min(bytes.count, Int(CInt.max))))
        if count <= 0 { library.clearErrors() }
        return Int(count)
    }
}
