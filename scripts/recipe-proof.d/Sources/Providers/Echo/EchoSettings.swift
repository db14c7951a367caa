import Foundation
import ProviderKit

/// The echo provider (a throwaway made by scripts/recipe-proof from docs/adding-a-provider.md): where its POSTs go
/// and how the connections behave, as the shared bearer-token HTTP/2 sender takes them.
public struct EchoSettings: Sendable, Equatable {
    public init() {}
    public var pool = BearerPoolSettings(url: "https://127.0.0.1:8443")
}

/// An echo app's credential: a file holding the key sent as its bearer token.
public struct EchoAuth: Sendable, Equatable {
    public var keyFile: String
    public init(keyFile: String) { self.keyFile = keyFile }

    /// Reads the key (trailing whitespace cut); an empty or unreadable file is a configuration error.
    public func load() throws -> EchoCredential {
        guard let data = FileManager.default.contents(atPath: keyFile) else { throw ConfigurationError(["cannot read echo.key_file \(keyFile)"]) }
        let key = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else { throw ConfigurationError(["echo.key_file \(keyFile) is empty"]) }
        return EchoCredential(key: key)
    }
}

/// What `EchoAuth.load` read.
public struct EchoCredential: Sendable, Equatable {
    public let key: String
}
