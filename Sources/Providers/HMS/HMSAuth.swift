import Foundation
import ProviderKit
import PushCore

/// A Huawei app's credential settings (an app's `hms`): its Push Kit app ID (the OAuth client ID, also in the send
/// path) and the file holding its client secret.
public struct HMSAuth: Sendable, Equatable {
    public var appID: String
    public var clientSecretFile: String
    public init(appID: String, clientSecretFile: String) {
        self.appID = appID
        self.clientSecretFile = clientSecretFile
    }

    /// Reads the secret (the file's text, trailing whitespace cut); a missing or empty file fails at start, never per job.
    public func load() throws(CredentialError) -> HMSCredential {
        guard let data = FileManager.default.contents(atPath: clientSecretFile) else {
            throw .unreadableKey(detail: "cannot read client secret file \(clientSecretFile)")
        }
        let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw .unreadableKey(detail: "client secret file \(clientSecretFile) is empty") }
        guard !appID.isEmpty, appID.utf8.allSatisfy(HMSCredential.isPathByte) else {
            throw .unreadableKey(detail: "app_id '\(appID.prefix(64))' must be non-empty letters, digits, '-', '_' or '.'")
        }
        return HMSCredential(appID: appID, secret: secret)
    }
}

/// A loaded Huawei credential. Never printed: `description` names the app, not the secret.
public struct HMSCredential: Sendable, CustomStringConvertible {
    public let appID: String
    let secret: String

    public init(appID: String, secret: String) {
        self.appID = appID
        self.secret = secret
    }

    public var description: String { "Huawei app \(appID)" }

    /// Where its messages go: `POST /v1/<app id>/messages:send`.
    public var sendPath: String { "/v1/\(appID)/messages:send" }

    /// The client-credentials grant's form body (RFC 6749 4.4), each value form-encoded.
    public var formBody: [UInt8] {
        Array(("grant_type=client_credentials&client_id=" + Self.formEncoded(appID) + "&client_secret=" + Self.formEncoded(secret)).utf8)
    }

    /// `application/x-www-form-urlencoded`: unreserved bytes as they are, every other byte as `%XX`.
    static func formEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if isPathByte(byte) || byte == UInt8(ascii: "~") { out.unicodeScalars.append(Unicode.Scalar(byte)) } else {
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }

    static func isPathByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
            || b == UInt8(ascii: ".")
    }
}

/// Huawei's access-token exchange for `AccessTokenCache`: the client-credentials form POSTed to the token endpoint.
public enum HMSTokenGrant {
    public static func exchange(_ credential: HMSCredential, settings: HMSSettings,
                                post: @escaping OAuthTokenEndpoint.Post = OAuthTokenEndpoint.curlPost) -> AccessTokenCache.Exchange {
        let url = settings.tokenURL
        let form = credential.formBody
        let options = settings.pool.tokenOptions
        return { OAuthTokenEndpoint.exchange(url: url, form: form, options: options, post: post) }
    }
}
