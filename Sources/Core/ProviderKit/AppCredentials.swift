import Foundation
import PushCore

/// An app's settings and the credential its provider loaded (APNs' `APNsCredential`, FCM's `ServiceAccount`),
/// which only that provider's sender reads. Loading reads the key files and proves them, so `herald check-config`
/// and the worker fail the same way.
public struct AppCredentials: Sendable {
    public let app: Configuration.AppSettings
    public let credential: any Sendable

    public init(app: Configuration.AppSettings, credential: any Sendable) {
        self.app = app
        self.credential = credential
    }

    public static func load(_ app: Configuration.AppSettings, configuration: Configuration) throws -> AppCredentials {
        AppCredentials(app: app, credential: try configuration.providers.provider(for: app.platform).loadCredential(app, configuration: configuration))
    }

    /// `herald check-config`'s word on a loaded credential (after "ok   app 'x' "): what was proven with it, after
    /// the provider's further proof (a token exchange), which throws when it fails.
    public func checkedLine(configuration: Configuration) throws -> String {
        let provider = configuration.providers.provider(for: app.platform)
        let line = provider.checkedLine(app, credential: credential)
        return try provider.prove(app, credential: credential, configuration: configuration).map { line + "; " + $0 } ?? line
    }

    /// Warnings that do not stop a worker: the provider's own (`PushProvider.warnings`), a key file that other users
    /// can read.
    public static func warnings(_ app: Configuration.AppSettings, configuration: Configuration) -> [String] {
        let provider = configuration.providers.provider(for: app.platform)
        let files = provider.credentialFiles(app)
        var warnings = provider.warnings(app)
        for file in files {
            if let attributes = try? FileManager.default.attributesOfItem(atPath: file),
               let permissions = attributes[.posixPermissions] as? NSNumber, permissions.intValue & 0o077 != 0 {
                warnings.append("app '\(app.name)': \(file) is readable by other users (mode \(String(permissions.intValue, radix: 8))); chmod 600 it")
            }
        }
        return warnings
    }
}
