import ProviderKit

/// Huawei Push Kit's place in the configuration, which names no provider: its `hms` section and an app's `hms`
/// block, each kept by its key and read here by type.
extension Configuration {
    public typealias HMSSettings = HMS.HMSSettings

    public var hms: HMS.HMSSettings {
        get { sections[HMS.HMSSettings.self, default: HMS.HMSSettings()] }
        set { sections[HMS.HMSSettings.self, default: HMS.HMSSettings()] = newValue }
    }
}

extension Configuration.AppSettings {
    /// An app of kind Huawei Push Kit: its app ID and client secret file; it takes hms jobs only.
    public var hms: HMSAuth? {
        get { credentials[HMSAuth.self] }
        set { credentials[HMSAuth.self] = newValue }
    }
}
