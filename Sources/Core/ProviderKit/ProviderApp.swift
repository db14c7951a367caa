/// One configured app as its provider's sender holds it: where it sits among the configuration's apps, its
/// name for logs and metrics, its credential settings (read again by a reload) and what was loaded from them.
public struct ProviderApp<Auth: Sendable, Credential: Sendable>: Sendable {
    /// Its index among the configuration's apps: the destinations' `app`.
    public let index: Int
    public let name: String
    public let auth: Auth
    public let credential: Credential

    public init(index: Int, name: String, auth: Auth, credential: Credential) {
        self.index = index
        self.name = name
        self.auth = auth
        self.credential = credential
    }
}
