import ProviderKit

/// Expo's place in the configuration, which names no provider: its `expo` section and an app's `expo` block, each
/// kept by its key and read here by type.
extension Configuration {
    public typealias ExpoSettings = Expo.ExpoSettings

    public var expo: Expo.ExpoSettings {
        get { sections[Expo.ExpoSettings.self, default: Expo.ExpoSettings()] }
        set { sections[Expo.ExpoSettings.self, default: Expo.ExpoSettings()] = newValue }
    }
}

extension Configuration.AppSettings {
    /// An app of kind Expo: its access token file; it takes expo jobs only.
    public var expo: ExpoAuth? {
        get { credentials[ExpoAuth.self] }
        set { credentials[ExpoAuth.self] = newValue }
    }
}
