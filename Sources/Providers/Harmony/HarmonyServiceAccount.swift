import Foundation
import PushCore

/// A HarmonyOS app's credential settings (an app's `harmony`): the service-account key file Huawei's API Console
/// issues. Its project is the file's `project_id`, so one file is one project, and several apps are several projects.
public struct HarmonyAuth: Sendable, Equatable {
    public var serviceAccountFile: String
    public init(serviceAccountFile: String) { self.serviceAccountFile = serviceAccountFile }

    /// Reads and parses the file; a broken one fails at start, never per job.
    public func load() throws(CredentialError) -> HarmonyServiceAccount {
        guard let data = FileManager.default.contents(atPath: serviceAccountFile) else {
            throw .unreadableKey(detail: "cannot read service account file \(serviceAccountFile)")
        }
        return try HarmonyServiceAccount.parse(Array(data), path: serviceAccountFile)
    }
}

/// Huawei's service account as its key file holds it (`project_id`, `key_id`, `sub_account`, `private_key`, and
/// Huawei's endpoints, which Push Kit v3 does not need): what signs the JWT every send carries. The RSA key is
/// parsed at load. Never printed: `description` names the project and key, not the key's bits.
public struct HarmonyServiceAccount: Sendable, CustomStringConvertible {
    public let projectID: String
    public let keyID: String
    public let subAccount: String
    public let key: RSASigningKey

    public init(projectID: String, keyID: String, subAccount: String, key: RSASigningKey) {
        self.projectID = projectID
        self.keyID = keyID
        self.subAccount = subAccount
        self.key = key
    }

    public var description: String { "HarmonyOS project \(projectID) (key \(keyID))" }

    /// Where its messages go: `POST /v3/<project id>/messages:send`.
    public var sendPath: String { "/v3/\(projectID)/messages:send" }

    /// Parses a key file's bytes; `path` only names it in errors.
    public static func parse(_ bytes: [UInt8], path: String) throws(CredentialError) -> HarmonyServiceAccount {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] else {
            throw .unreadableKey(detail: "service account file \(path) is not a JSON object")
        }
        func field(_ name: String) throws(CredentialError) -> String {
            guard let text = object[name] as? String, !text.isEmpty else {
                throw .unreadableKey(detail: "service account file \(path) has no \"\(name)\" string")
            }
            return text
        }
        let projectID = try field("project_id"), keyID = try field("key_id"), subAccount = try field("sub_account")
        // The project id goes into the request path: digits (AppGallery Connect's), or at least no path characters.
        guard projectID.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }) else {
            throw .unreadableKey(detail: "service account file \(path): project_id '\(projectID.prefix(64))' cannot go into a URL path")
        }
        let key: RSASigningKey
        do { key = try RSASigningKey(pem: try field("private_key")) } catch {
            throw .unreadableKey(detail: "service account file \(path): private_key: \(error)")
        }
        return HarmonyServiceAccount(projectID: projectID, keyID: keyID, subAccount: subAccount, key: key)
    }
}

/// The JWT Push Kit v3 takes as its bearer token ("Generating a JWT Based on a Service Account"): header `kid` (the
/// file's `key_id`), `typ` JWT, `alg` PS256; claims `iss` (the `sub_account`), `aud` (Huawei's token endpoint, as the
/// guide names it), `iat` and `exp`; signed with the account's key, RSA-PSS with SHA-256. Pure.
public enum HarmonyJWT {
    public static let audience = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    public static func sign(_ account: HarmonyServiceAccount, issuedAt: Int64, lifetimeSeconds: Int64) throws(CredentialError) -> String {
        var header = JSONWriter(capacity: 96)
        header.beginObject(); header.field("kid", account.keyID); header.field("typ", "JWT"); header.field("alg", "PS256"); header.endObject()
        var claims = JSONWriter(capacity: 192)
        claims.beginObject()
        claims.field("aud", audience); claims.field("iss", account.subAccount)
        claims.field("exp", issuedAt + lifetimeSeconds); claims.field("iat", issuedAt)
        claims.endObject()
        let signingInput = base64URLEncoded(header.bytes) + "." + base64URLEncoded(claims.bytes)
        return signingInput + "." + base64URLEncoded(try account.key.signPS256(Array(signingInput.utf8)))
    }
}
