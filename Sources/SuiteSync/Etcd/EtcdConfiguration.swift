import Foundation

/// How an `EtcdClient` reaches a cluster: its endpoints, credentials and limits.
public struct EtcdConfiguration: Sendable {
    /// The members' client URLs, `http://` or `https://`, tried in order; a request that
    /// fails on one (connection error, timeout, 5xx, "unavailable") goes to the next.
    public var endpoints: [URL]

    /// The user and password for etcd's authentication; nil when auth is off.
    public var credentials: EtcdCredentials?

    /// A PEM file of the certificate authorities to trust for `https` endpoints
    /// (`--cacert`). See `EtcdTrust`: the client trusts exactly these (or the system store when nil).
    public var certificateAuthorityFile: String?

    /// The longest one request to one endpoint may take, connection included. A request
    /// that tries every endpoint may take this long for each.
    public var requestTimeout: Duration

    /// The longest a watch's stream may stay silent before the watch is taken as
    /// interrupted; nil never. etcd sends nothing while nothing changes, so set it only
    /// together with a shorter progress interval on the server
    /// (`--experimental-watch-progress-notify-interval`): the client asks for progress
    /// notifications whenever this is set.
    public var watchIdleTimeout: Duration?

    /// The largest reply, and the largest line of a watch's stream, that is read; a larger
    /// one is an `EtcdError.replyTooLarge`.
    public var maximumReplyBytes: Int

    /// A configuration for `endpoints`, with a 5-second request timeout and a 64 MiB cap.
    public init(endpoints: [URL], credentials: EtcdCredentials? = nil, certificateAuthorityFile: String? = nil,
                requestTimeout: Duration = .seconds(5), watchIdleTimeout: Duration? = nil,
                maximumReplyBytes: Int = 64 << 20) {
        self.endpoints = endpoints
        self.credentials = credentials
        self.certificateAuthorityFile = certificateAuthorityFile
        self.requestTimeout = requestTimeout
        self.watchIdleTimeout = watchIdleTimeout
        self.maximumReplyBytes = maximumReplyBytes
    }

    /// A configuration for a comma-separated endpoint list, as `--endpoints` takes it:
    /// `http://127.0.0.1:2379,http://127.0.0.1:22379`.
    public init(endpointList: String, credentials: EtcdCredentials? = nil) throws(EtcdError) {
        let parts = endpointList.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        var endpoints: [URL] = []
        for part in parts {
            guard let url = URL(string: part) else { throw .invalidConfiguration("\"\(part)\" is not a URL") }
            endpoints.append(url)
        }
        self.init(endpoints: endpoints, credentials: credentials)
        try validate()
    }

    /// Checks what the client needs: at least one endpoint, each `http` or `https` with a
    /// host and no user name or password in it (credentials go in `credentials`, so
    /// that they never appear in an error message).
    public func validate() throws(EtcdError) {
        guard !endpoints.isEmpty else { throw .invalidConfiguration("no endpoint") }
        for endpoint in endpoints {
            guard endpoint.user == nil, endpoint.password == nil else {
                throw .invalidConfiguration("an endpoint holds a user name or password; use --user and --password-file")
            }
            guard let scheme = endpoint.scheme?.lowercased(), scheme == "http" || scheme == "https",
                  let host = endpoint.host, !host.isEmpty
            else { throw .invalidConfiguration("\"\(endpoint.absoluteString)\" is not an http:// or https:// URL with a host") }
        }
        guard maximumReplyBytes > 0 else { throw .invalidConfiguration("maximumReplyBytes must be positive") }
        guard requestTimeout > .zero else { throw .invalidConfiguration("requestTimeout must be positive") }
    }
}

/// A user name and password for etcd. Its description never shows the password.
public struct EtcdCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public var name: String
    public var password: String

    public init(name: String, password: String) {
        self.name = name
        self.password = password
    }

    /// The credentials for `name` with the password read from `path` (`--password-file`):
    /// the file's first line, without its line end.
    public init(name: String, passwordFile path: String) throws(EtcdError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .invalidConfiguration("cannot read the password file \(path)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw .invalidConfiguration("the password file \(path) is not UTF-8")
        }
        let firstLine = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let password = firstLine.hasSuffix("\r") ? String(firstLine.dropLast()) : String(firstLine)
        guard !password.isEmpty else { throw .invalidConfiguration("the password file \(path) is empty") }
        self.init(name: name, password: password)
    }

    public var description: String { "EtcdCredentials(name: \(name), password: <hidden>)" }
    public var debugDescription: String { description }
}
