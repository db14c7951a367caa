import PushCore

/// Refuses locally what Expo's push service would refuse (each refusal costs a round trip, and a 400 for one message
/// fails its whole request): the payload is the message without `to`, an object of Expo's documented members
/// with their documented types, at most 4,096 bytes. The bytes are never changed. Pure.
public enum ExpoMessageRules {
    /// Expo's limit on a notification's payload.
    public static let maxPayloadBytes = 4096

    public static func validate(_ payload: [UInt8]) -> ExpoRefusal? {
        guard payload.count <= maxPayloadBytes else {
            return ExpoRefusal("MessageTooBig: the message is \(payload.count) bytes; at most \(maxPayloadBytes)")
        }
        return payload.withUnsafeBufferPointer { buffer -> ExpoRefusal? in
            do throws(ExpoRefusal) {
                let isObject = try JSONScanner.scanObject(buffer) { (scanner, key, value) throws(ExpoRefusal) in
                    try check(scanner.stringValue(key), value, scanner)
                }
                return isObject ? nil : ExpoRefusal("BadMessage: the payload must be a JSON object")
            } catch {
                return error
            }
        }
    }

    /// One member: its documented kinds (`null` stands for absent).
    private static func check(_ name: String, _ value: JSONToken, _ scanner: JSONScanner) throws(ExpoRefusal) {
        if value.kind == .null { return }
        let ok: Bool
        switch name {
        case "title", "body", "subtitle", "channelId", "categoryId", "interruptionLevel": ok = value.kind == .string
        case "data", "richContent": ok = value.kind == .object
        case "ttl", "expiration", "badge": ok = value.kind == .number && value.isInteger
        case "mutableContent", "_contentAvailable", "contentAvailable": ok = value.kind == .bool
        case "sound": ok = value.kind == .string || value.kind == .object
        case "priority":
            ok = value.kind == .string && ["default", "normal", "high"].contains(scanner.stringValue(value))
        case "to":
            throw ExpoRefusal("BadMessage: \"to\" belongs in the job, not in its payload")
        default:
            throw ExpoRefusal("BadMessage: unknown member \"\(name.prefix(64))\" in the message")
        }
        guard ok else { throw ExpoRefusal("BadMessage: \"\(name)\" has the wrong type (docs/expo.md lists each member's)") }
    }
}

/// Why an Expo job is refused, as its result's reason (`BadMessage: ...`).
public struct ExpoRefusal: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
