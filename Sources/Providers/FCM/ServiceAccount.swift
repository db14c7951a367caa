import Foundation
import PushCore

/// A Google service account as its JSON key file holds it: what Herald needs to sign the OAuth assertion
/// and where to exchange it. `private_key` is parsed at load, so a broken file fails at start, never per job.
/// Never printed: `description` names the account, not the key.
public struct ServiceAccount: Sendable, CustomStringConvertible {
    public let projectID: String
    public let clientEmail: String
    public let privateKeyID: String?
    public let tokenURI: String
    public let key: RSASigningKey

    /// The token endpoint Google's key files name; used when a file has no `token_uri`.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"

    public var description: String { "service account \(clientEmail) (project \(projectID))" }

    public enum LoadError: Error, Equatable, Sendable, CustomStringConvertible {
        case unreadable(path: String)
        case notJSON(path: String)
        case missing(field: String, path: String)
        case wrongType(String, path: String)
        case badKey(CredentialError, path: String)
        case insecureTokenURI(String, path: String)

        public var description: String {
            switch self {
            case .unreadable(let p): "cannot read service account file \(p)"
            case .notJSON(let p): "service account file \(p) is not a JSON object"
            case .missing(let f, let p): "service account file \(p) has no \"\(f)\""
            case .wrongType(let f, let p): "service account file \(p): \"\(f)\" must be a string"
            case .badKey(let e, let p): "service account file \(p): private_key: \(e)"
            case .insecureTokenURI(let uri, let p):
                "service account file \(p): token_uri \(uri.prefix(200).debugDescription) is not an https:// URL (the signed assertion must not travel in cleartext or to another scheme)"
            }
        }
    }

    public init(projectID: String, clientEmail: String, privateKeyID: String?, tokenURI: String, key: RSASigningKey) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
        self.key = key
    }

    public static func load(file path: String) throws(LoadError) -> ServiceAccount {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(path: path) }
        return try parse(Array(data), path: path)
    }

    /// Parses a key file's bytes; `path` only names it in errors.
    public static func parse(_ bytes: [UInt8], path: String) throws(LoadError) -> ServiceAccount {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] else { throw .notJSON(path: path) }
        func field(_ name: String, required: Bool = true) throws(LoadError) -> String? {
            guard let value = object[name], !(value is NSNull) else {
                if required { throw .missing(field: name, path: path) }
                return nil
            }
            guard let text = value as? String else { throw .wrongType(name, path: path) }
            if required && text.isEmpty { throw .missing(field: name, path: path) }
            return text
        }
        let projectID = try field("project_id")!
        let clientEmail = try field("client_email")!
        let pem = try field("private_key")!
        let keyID = try field("private_key_id", required: false)
        let tokenURI = try field("token_uri", required: false) ?? googleTokenURI
        guard tokenURI.lowercased().hasPrefix("https://") else { throw .insecureTokenURI(tokenURI, path: path) }
        let key: RSASigningKey
        do { key = try RSASigningKey(pem: pem) } catch { throw .badKey(error, path: path) }
        return ServiceAccount(projectID: projectID, clientEmail: clientEmail, privateKeyID: keyID?.isEmpty == true ? nil : keyID,
                              tokenURI: tokenURI, key: key)
    }
}
