import Foundation

/// Trusting a certificate authority for `https` endpoints.
enum EtcdTrust {
    static func apply(_ configuration: EtcdConfiguration) throws(EtcdError) {
        guard let path = configuration.certificateAuthorityFile else { return }
        guard let data = FileManager.default.contents(atPath: path),
              String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----")
        else { throw .invalidConfiguration("\(path) is not a readable PEM file of certificates") }
    }
}
