import ProviderKit

/// HarmonyOS Push Kit's place in the configuration, which names no provider: its `harmony` section and an app's
/// `harmony` block, each kept by its key and read here by type.
extension Configuration {
    public typealias HarmonySettings = Harmony.HarmonySettings

    public var harmony: Harmony.HarmonySettings {
        get { sections[Harmony.HarmonySettings.self, default: Harmony.HarmonySettings()] }
        set { sections[Harmony.HarmonySettings.self, default: Harmony.HarmonySettings()] = newValue }
    }
}

extension Configuration.AppSettings {
    /// An app of kind HarmonyOS Push Kit: its service-account key file; it takes harmony jobs only.
    public var harmony: HarmonyAuth? {
        get { credentials[HarmonyAuth.self] }
        set { credentials[HarmonyAuth.self] = newValue }
    }
}
