import COpenSSL
import Foundation

/// A Google service account as the FCM simulator knows it: project, client email, key ID and an RSA key.
///
/// Holds an OpenSSL `EVP_PKEY` (with its private half when generated here); frees it in `deinit`.
/// @unchecked: immutable after creation, and OpenSSL key objects are safe for concurrent signing and verifying.
public final class MockServiceAccount: @unchecked Sendable {
    public let projectID: String
    public let clientEmail: String
    /// `private_key_id`: the `kid` an assertion's header names.
    public let privateKeyID: String
    let key: OpaquePointer
    let hasPrivateKey: Bool

    init(projectID: String, clientEmail: String, privateKeyID: String, key: OpaquePointer, hasPrivateKey: Bool) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.key = key
        self.hasPrivateKey = hasPrivateKey
    }

    deinit { EVP_PKEY_free(key) }

    /// A fresh 2048-bit RSA account (as Google issues them). The email defaults to Google's
    /// `firebase-adminsdk@<project>.iam.gserviceaccount.com` form.
    public static func generate(projectID: String = "herald-mock", clientEmail: String? = nil, privateKeyID: String? = nil) throws -> MockServiceAccount {
        guard let key = copenssl_rsa_gen(2048) else { throw OpenSSLSupport.lastError("EVP_RSA_gen(2048)") }
        var idBytes = [UInt8](repeating: 0, count: 20)
        RAND_bytes(&idBytes, 20)
        let id = privateKeyID ?? idBytes.map { String(format: "%02x", $0) }.joined()
        return MockServiceAccount(projectID: projectID, clientEmail: clientEmail ?? "firebase-adminsdk@\(projectID).iam.gserviceaccount.com",
                                  privateKeyID: id, key: key, hasPrivateKey: true)
    }

    /// Reads a service-account JSON file (Google's, or one written by `write(to:tokenURI:)`): the simulator
    /// then accepts assertions signed with its key. Only the public half is needed to verify.
    public static func load(file: String) throws -> MockServiceAccount {
        let bytes = try OpenSSLSupport.readFile(file)
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              let project = object["project_id"] as? String, let email = object["client_email"] as? String,
              let pem = object["private_key"] as? String else {
            throw SimulatorError.configuration("\(file): not a service-account JSON (project_id, client_email, private_key)")
        }
        let key = try OpenSSLSupport.privateKey(pem: Array(pem.utf8))
        return MockServiceAccount(projectID: project, clientEmail: email, privateKeyID: object["private_key_id"] as? String ?? "",
                                  key: key, hasPrivateKey: true)
    }

    /// The service-account JSON clients read, with `token_uri` pointing at the simulator.
    public func json(tokenURI: String) throws -> [UInt8] {
        guard hasPrivateKey else { throw SimulatorError.configuration("account \(clientEmail) has no private key to write") }
        let object: [String: String] = [
            "type": "service_account", "project_id": projectID, "private_key_id": privateKeyID,
            "private_key": String(decoding: try OpenSSLSupport.pkcs8PEM(key), as: UTF8.self),
            "client_email": clientEmail, "client_id": "100000000000000000000", "token_uri": tokenURI,
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
        return [UInt8](data) + [0x0a]
    }

    /// Writes the JSON (mode 0600: it holds a private key, as Google's file does).
    public func write(to path: String, tokenURI: String) throws {
        try OpenSSLSupport.writeFile(path, try json(tokenURI: tokenURI), mode: 0o600)
    }

    /// An RS256 JWT-bearer assertion as Google's client libraries sign it; the parameters let tests break it.
    public func makeAssertion(audience: String, scope: String? = MockFCMScopes.messaging,
                              issuedAt: Int64 = Int64(Date().timeIntervalSince1970), lifetime: Int64 = 3600,
                              issuer: String? = nil, keyID: String? = nil) throws -> String {
        guard hasPrivateKey else { throw SimulatorError.configuration("account \(clientEmail) has no private key to sign with") }
        let header = Base64URL.encode(Array(#"{"alg":"RS256","typ":"JWT","kid":"\#(keyID ?? privateKeyID)"}"#.utf8))
        var claims: [String: Any] = ["iss": issuer ?? clientEmail, "aud": audience, "iat": issuedAt, "exp": issuedAt + lifetime]
        if let scope { claims["scope"] = scope }
        let claimBytes = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys, .withoutEscapingSlashes])
        let input = "\(header).\(Base64URL.encode([UInt8](claimBytes)))"
        let signature = try OpenSSLSupport.signSHA256(Array(input.utf8), key: key)  // RS256: PKCS#1 v1.5, the RSA default
        return "\(input).\(Base64URL.encode(signature))"
    }
}

/// The OAuth scopes FCM accepts for `messages:send`.
public enum MockFCMScopes {
    public static let messaging = "https://www.googleapis.com/auth/firebase.messaging"
    /// Google's broad scope; the Admin SDKs ask for it (among others) instead of firebase.messaging.
    public static let cloudPlatform = "https://www.googleapis.com/auth/cloud-platform"
}
