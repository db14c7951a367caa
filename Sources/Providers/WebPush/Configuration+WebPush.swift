import ProviderKit

/// Web Push's place in the configuration, which names no provider: its `web_push` section and an app's `webpush`
/// block, each kept by its key and read here by type.
extension Configuration {
    public var webPush: WebPushSettings {
        get { sections[WebPushSettings.self, default: WebPushSettings()] }
        set { sections[WebPushSettings.self, default: WebPushSettings()] = newValue }
    }
}

extension Configuration.AppSettings {
    /// An app of kind Web Push: its VAPID key, subject and allowed push services; it takes Web Push jobs only.
    public var webpush: WebPushAuth? {
        get { credentials[WebPushAuth.self] }
        set { credentials[WebPushAuth.self] = newValue }
    }
}
