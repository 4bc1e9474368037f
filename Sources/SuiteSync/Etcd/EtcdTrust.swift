import Foundation

/// Trusting certificate authorities for `https://` endpoints (`--cacert`).
///
/// What was found on Linux with Swift 6.3.1: swift-corelibs-foundation's URLSession
/// cannot be told a CA file. It reads `URLSessionCertificateAuthorityInfoFile` only on
/// Android (the variable is not even in the Linux library), libcurl's own
/// `CURL_CA_BUNDLE` and OpenSSL's `SSL_CERT_FILE` are ignored because libcurl is given
/// its built-in bundle path explicitly, and server-trust challenges never reach the
/// delegate: URLSession trusts the system store (/etc/ssl/certs) and nothing else,
/// process-wide. (It also traps on etcd's error replies; see `SocketTransport`.)
///
/// So the client speaks TLS itself, through OpenSSL's libssl loaded at run time
/// (`TLSLibrary`), with a context per client that trusts exactly `--cacert`, or the
/// system store when none is given, and checks the certificate against the endpoint's
/// host name or IP address.
enum EtcdTrust {
    /// The TLS context for the configuration's `https://` endpoints; nil when it has none.
    static func context(for configuration: EtcdConfiguration) throws(EtcdError) -> TLSContext? {
        let path = configuration.certificateAuthorityFile
        if let path {
            guard let data = FileManager.default.contents(atPath: path),
                  String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----")
            else { throw .invalidConfiguration("\(path) is not a readable PEM file of certificates") }
        }
        guard configuration.endpoints.contains(where: { $0.scheme?.lowercased() == "https" }) else { return nil }
        return try TLSContext(caFile: path)
    }
}
