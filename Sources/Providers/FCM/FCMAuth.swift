import PushCore
import Reactor

/// An FCM app's credential settings (an app's `fcm`): its service account's JSON key file.
public struct FCMAuth: Sendable, Equatable {
    /// The service account's JSON key file (`project_id`, `client_email`, `private_key`, `token_uri`).
    public var serviceAccountFile: String
    public init(serviceAccountFile: String) { self.serviceAccountFile = serviceAccountFile }

    /// Reads the service account and proves its key by signing one assertion, so `herald check-config`, the
    /// worker's start and a reload fail the same way.
    public func load() throws -> ServiceAccount {
        let account = try ServiceAccount.load(file: serviceAccountFile)
        _ = try OAuthAssertion.sign(account, issuedAt: wallClockMillis() / 1000)
        return account
    }
}
