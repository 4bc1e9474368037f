import Foundation

/// One JSON object from etcd, read as hostile input: every accessor checks the type and
/// throws `EtcdError.malformedReply` naming the field, never traps.
///
/// The gateway writes 64-bit numbers as JSON strings and leaves out every field at its
/// default value (0, false, empty), so a missing number is 0 and a missing flag false;
/// only the callers know which fields must be there.
struct EtcdReply {
    let fields: [String: Any]
    let endpoint: String

    /// Parses `data` as one JSON object.
    init(parsing data: Data, from endpoint: String) throws(EtcdError) {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: data, options: [])
        } catch {
            throw .malformedReply(endpoint: endpoint, reason: "not JSON (\(data.count) bytes)")
        }
        guard let object = parsed as? [String: Any] else {
            throw .malformedReply(endpoint: endpoint, reason: "not a JSON object")
        }
        self.init(object, from: endpoint)
    }

    init(_ fields: [String: Any], from endpoint: String) {
        self.fields = fields
        self.endpoint = endpoint
    }

    func malformed(_ reason: String) -> EtcdError { .malformedReply(endpoint: endpoint, reason: reason) }

    func has(_ name: String) -> Bool { fields[name] != nil && !(fields[name] is NSNull) }

    /// A nested object; nil when absent.
    func object(_ name: String) throws(EtcdError) -> EtcdReply? {
        guard let value = fields[name], !(value is NSNull) else { return nil }
        guard let object = value as? [String: Any] else { throw malformed("\(name) is not an object") }
        return EtcdReply(object, from: endpoint)
    }

    /// An array of objects; empty when absent.
    func objects(_ name: String) throws(EtcdError) -> [EtcdReply] {
        guard let value = fields[name], !(value is NSNull) else { return [] }
        guard let array = value as? [Any] else { throw malformed("\(name) is not an array") }
        var objects: [EtcdReply] = []
        objects.reserveCapacity(array.count)
        for element in array {
            guard let object = element as? [String: Any] else { throw malformed("an element of \(name) is not an object") }
            objects.append(EtcdReply(object, from: endpoint))
        }
        return objects
    }

    /// A 64-bit integer, written as a JSON string (as the gateway does) or a JSON number;
    /// 0 when absent.
    func integer(_ name: String) throws(EtcdError) -> Int64 {
        guard let value = fields[name], !(value is NSNull) else { return 0 }
        if let text = value as? String {
            guard let number = Int64(text) else { throw malformed("\(name) is not an integer") }
            return number
        }
        if let number = value as? NSNumber, !isJSONBoolean(value) {
            let double = number.doubleValue
            guard double.isFinite, double.rounded() == double, abs(double) < 9.2e18 else {
                throw malformed("\(name) is not an integer")
            }
            return number.int64Value
        }
        throw malformed("\(name) is not an integer")
    }

    /// An unsigned 64-bit integer (member IDs), as a JSON string or number; 0 when absent.
    func unsigned(_ name: String) throws(EtcdError) -> UInt64 {
        guard let value = fields[name], !(value is NSNull) else { return 0 }
        if let text = value as? String, let number = UInt64(text) { return number }
        if let number = value as? NSNumber, !isJSONBoolean(value), number.doubleValue >= 0,
           number.doubleValue.rounded() == number.doubleValue, number.doubleValue < 1.8e19 {
            return number.uint64Value
        }
        throw malformed("\(name) is not an unsigned integer")
    }

    /// An integer that must not be negative (revisions, versions, counts).
    func count(_ name: String) throws(EtcdError) -> Int64 {
        let number = try integer(name)
        guard number >= 0 else { throw malformed("\(name) is negative") }
        return number
    }

    /// A flag; false when absent.
    func flag(_ name: String) throws(EtcdError) -> Bool {
        guard let value = fields[name], !(value is NSNull) else { return false }
        guard isJSONBoolean(value), let flag = value as? Bool else { throw malformed("\(name) is not a boolean") }
        return flag
    }

    /// A string; nil when absent.
    func string(_ name: String) throws(EtcdError) -> String? {
        guard let value = fields[name], !(value is NSNull) else { return nil }
        guard let text = value as? String else { throw malformed("\(name) is not a string") }
        return text
    }

    /// Bytes written as base64; empty when absent.
    func bytes(_ name: String) throws(EtcdError) -> Data {
        guard let text = try string(name) else { return Data() }
        guard let data = Data(base64Encoded: text) else { throw malformed("\(name) is not base64") }
        return data
    }

    /// The reply's `header.revision`, which every reply of a served request carries.
    func headerRevision() throws(EtcdError) -> Int64 {
        guard let header = try object("header") else { throw malformed("no header") }
        let revision = try header.count("revision")
        guard revision > 0 else { throw malformed("no header revision") }
        return revision
    }

    /// A key-value, as `kvs[]`, `kv` and `prev_kv` hold it. A key is never empty, and a
    /// stored key's `mod_revision` is at least 1.
    func keyValue() throws(EtcdError) -> EtcdKeyValue {
        let keyValue = EtcdKeyValue(key: try bytes("key"), value: try bytes("value"),
                                    createRevision: try count("create_revision"),
                                    modRevision: try count("mod_revision"), version: try count("version"))
        guard !keyValue.key.isEmpty else { throw malformed("a key-value has no key") }
        guard keyValue.modRevision > 0 else { throw malformed("a key-value has no mod_revision") }
        return keyValue
    }
}

/// The class JSONSerialization gives `true` and `false`. Foundation bridges any NSNumber
/// 0 or 1 to `Bool` (and a boolean to a number), so only the class tells them apart.
private let jsonBooleanClass = ObjectIdentifier(type(of: NSNumber(value: true)))

private func isJSONBoolean(_ value: Any) -> Bool {
    value is NSNumber && ObjectIdentifier(type(of: value as AnyObject)) == jsonBooleanClass
}

/// The fields of a request body: bytes go as base64, 64-bit numbers as strings.
enum EtcdRequestBody {
    static func base64(_ data: Data) -> String { data.base64EncodedString() }
    static func number(_ value: Int64) -> String { String(value) }

    static func encode(_ object: [String: Any]) -> Data {
        // Only strings, booleans, arrays and dictionaries built here go in; nothing can fail.
        (try? JSONSerialization.data(withJSONObject: object, options: [])) ?? Data("{}".utf8)
    }
}
