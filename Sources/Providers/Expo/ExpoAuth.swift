import Foundation
import ProviderKit
import PushCore

/// An Expo app's credential settings (an app's `expo`): the file holding its access token, which Expo asks for on
/// every request once the project turns on enhanced push security.
public struct ExpoAuth: Sendable, Equatable {
    public var accessTokenFile: String
    public init(accessTokenFile: String) { self.accessTokenFile = accessTokenFile }

    /// Reads the token (the file's text, whitespace cut); a missing or empty file fails at start, never per job.
    public func load() throws(CredentialError) -> ExpoCredential {
        guard let data = FileManager.default.contents(atPath: accessTokenFile) else {
            throw .unreadableKey(detail: "cannot read access token file \(accessTokenFile)")
        }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw .unreadableKey(detail: "access token file \(accessTokenFile) is empty") }
        guard token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .unreadableKey(detail: "access token file \(accessTokenFile) holds more than one printable word")
        }
        return ExpoCredential(accessToken: token)
    }
}

/// A loaded Expo access token. Never printed: `description` says only that there is one.
public struct ExpoCredential: Sendable, CustomStringConvertible {
    let accessToken: String
    public init(accessToken: String) { self.accessToken = accessToken }
    public var description: String { "Expo access token" }

    /// For `AccessTokenCache`: the token never expires on its own (a year stands for "until a 401 or a reload").
    public var exchange: AccessTokenCache.Exchange {
        let token = accessToken
        return { .success((token, 365 * 86_400)) }
    }

    /// `Bearer <token>` for the blocking receipts ask.
    var header: String { "Bearer " + accessToken }
}
