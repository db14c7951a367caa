import ProviderKit

/// The echo provider's place in the configuration, which names no provider: its section and an app's block.
extension Configuration {
    public var echo: EchoSettings {
        get { sections[EchoSettings.self, default: EchoSettings()] }
        set { sections[EchoSettings.self, default: EchoSettings()] = newValue }
    }
}

extension Configuration.AppSettings {
    /// An echo app's key file; it takes echo jobs only.
    public var echo: EchoAuth? {
        get { credentials[EchoAuth.self] }
        set { credentials[EchoAuth.self] = newValue }
    }
}
