import ProviderKit

/// FCM's place in the configuration, which names no provider: its `fcm` section and an app's `fcm` block, each
/// kept by its key and read here by type.
extension Configuration {
    public typealias FCMSettings = FCM.FCMSettings

    public var fcm: FCM.FCMSettings {
        get { sections[FCM.FCMSettings.self, default: .fcm] }
        set { sections[FCM.FCMSettings.self, default: .fcm] = newValue }
    }
}

extension Configuration.AppSettings {
    /// An app of kind FCM: it takes FCM jobs only, and needs no bundle ID.
    public init(name: String, bundleID: String, fcm: FCMAuth?) {
        self.init(name: name, bundleID: bundleID)
        self.fcm = fcm
    }

    /// Its service account.
    public var fcm: FCMAuth? {
        get { credentials[FCMAuth.self] }
        set { credentials[FCMAuth.self] = newValue }
    }
}
