/// Apple's rules for broadcast push (Live Activity channels, iOS 18), in one place for the validator, the client
/// and the CLI. See docs/broadcast.md.
public enum Broadcast {
    /// A broadcast body may be larger than a device push's.
    public static let maxPayloadBytes = 5120
    /// Apple says only "greater than the allowed length" (BadChannelId); its IDs are 24-character base64 strings.
    /// Herald refuses longer than this locally, and the simulator uses the same figure.
    public static let maxChannelIDBytes = 128
    /// Channels an app may keep per environment.
    public static let maxChannelsPerEnvironment = 10_000

    /// Standard base64 (`A-Z a-z 0-9 + /`), non-empty, at most `maxChannelIDBytes`, with up to two `=` of padding
    /// only at the end (and then a length that is a multiple of 4). IDs are passed on exactly as Apple sent them.
    public static func isValidChannelID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard !bytes.isEmpty, bytes.count <= maxChannelIDBytes else { return false }
        var padding = 0
        for b in bytes {
            if b == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0, isBase64(b) else { return false }
        }
        if padding > 2 || padding == bytes.count { return false }
        if padding > 0 && bytes.count % 4 != 0 { return false }
        return bytes.count % 4 != 1
    }

    @inline(__always) static func isBase64(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2B || b == 0x2F
    }

    /// True when `bundleID` carries a push type's topic suffix (`.push-type.liveactivity`, `.voip`, ...): the
    /// broadcast path takes the bare bundle ID (Apple answers TopicDisallowed otherwise).
    public static func hasPushTypeSuffix(_ bundleID: String) -> Bool {
        PushType.allCases.contains { type in
            guard let suffix = type.topicSuffix, !suffix.isEmpty else { return false }
            return bundleID.hasSuffix(suffix)
        }
    }
}

/// A channel's message storage policy, chosen when it is created and fixed for its life.
public enum MessageStoragePolicy: Int, Sendable, CaseIterable, CustomStringConvertible {
    /// APNs tries once and stores nothing: every broadcast must carry `apns-expiration: 0`.
    case noMessagesStored = 0
    /// APNs keeps the most recent broadcast for devices that are offline.
    case mostRecentMessageStored = 1

    /// The CLI's words for it.
    public init?(name: String) {
        switch name {
        case "none", "no-messages-stored", "0": self = .noMessagesStored
        case "most-recent", "most-recent-message-stored", "1": self = .mostRecentMessageStored
        default: return nil
        }
    }

    public var description: String { self == .noMessagesStored ? "none" : "most-recent" }
}
