import ProviderKit

/// APNs' place in the configuration, which names no provider: its `apns` section and an app's `token` or
/// `certificate` block, each kept by its key and read here by type.
extension Configuration {
    public typealias APNsSettings = APNs.APNsSettings

    public var apns: APNs.APNsSettings {
        get { sections[APNs.APNsSettings.self, default: APNs.APNsSettings()] }
        set { sections[APNs.APNsSettings.self, default: APNs.APNsSettings()] = newValue }
    }
}

extension Configuration.AppSettings {
    public init(name: String, bundleID: String, token: APNsTokenAuth?) {
        self.init(name: name, bundleID: bundleID)
        self.token = token
    }

    public var token: APNsTokenAuth? {
        get { credentials[APNsTokenAuth.self] }
        set { credentials[APNsTokenAuth.self] = newValue }
    }

    public var certificate: APNsCertificateAuth? {
        get { credentials[APNsCertificateAuth.self] }
        set { credentials[APNsCertificateAuth.self] = newValue }
    }

    /// Its APNs credential settings (`token` or `certificate`).
    public var apnsAuth: APNsAuth { APNsAuth(token: token, certificate: certificate) }
}
