import PushCore

/// The `apns-push-type` values; each one fixes the topic suffix APNs expects and the payload limit.
public enum PushType: String, CaseIterable, Sendable {
    case alert, background, location, voip, complication, fileprovider, mdm
    case liveactivity, pushtotalk, widgets, controls

    /// What is appended to the bundle ID to form `apns-topic`; `""` means the bare bundle ID,
    /// `nil` (mdm) means any topic: it comes from the MDM certificate, not from a bundle ID.
    public var topicSuffix: String? {
        switch self {
        case .alert, .background: return ""
        case .location: return ".location-query"
        case .voip: return ".voip"
        case .complication: return ".complication"
        case .fileprovider: return ".pushkit.fileprovider"
        case .mdm: return nil
        case .liveactivity: return ".push-type.liveactivity"
        case .pushtotalk: return ".voip-ptt"
        case .widgets: return ".push-type.widgets"
        case .controls: return ".push-type.controls"
        }
    }

    /// APNs refuses larger bodies with 413 PayloadTooLarge.
    public var maxPayloadBytes: Int { self == .voip ? 5120 : 4096 }

    /// The topic for a bundle ID; nil for mdm, whose topic cannot be derived.
    public func topic(forBundleID bundleID: String) -> String? {
        topicSuffix.map { bundleID + $0 }
    }

    /// Priority sent when the job gives none: APNs defaults to 10, which it refuses for background.
    public var defaultPriority: Int { self == .background ? 5 : 10 }
}

extension APNsEnvironment {
    /// Apple's host of the environment.
    public var host: String {
        self == .production ? "api.push.apple.com" : "api.sandbox.push.apple.com"
    }
}
