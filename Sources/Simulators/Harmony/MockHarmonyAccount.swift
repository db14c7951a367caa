import COpenSSL
import Foundation

/// A Huawei service account as the Push Kit v3 simulator knows it: project, key id, sub-account and an RSA key
/// whose public half verifies the JWTs sent for the project.
///
/// Holds an OpenSSL `EVP_PKEY` (with its private half when generated or read here); frees it in `deinit`.
/// @unchecked: immutable after creation, and OpenSSL key objects are safe for concurrent signing and verifying.
public final class MockHarmonyAccount: @unchecked Sendable {
    public let projectID: String
    public let keyID: String
    public let subAccount: String
    let key: OpaquePointer

    init(projectID: String, keyID: String, subAccount: String, key: OpaquePointer) {
        self.projectID = projectID
        self.keyID = keyID
        self.subAccount = subAccount
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// A fresh 2048-bit RSA account; the ids random in Huawei's forms when not given.
    public static func generate(projectID: String = "101653523863785276", keyID: String? = nil, subAccount: String? = nil) throws -> MockHarmonyAccount {
        guard let key = copenssl_rsa_gen(2048) else { throw OpenSSLSupport.lastError("EVP_RSA_gen(2048)") }
        func hex(_ count: Int) -> String {
            var bytes = [UInt8](repeating: 0, count: count)
            RAND_bytes(&bytes, Int32(count))
            return bytes.map { String(format: "%02x", $0) }.joined()
        }
        return MockHarmonyAccount(projectID: projectID, keyID: keyID ?? hex(16), subAccount: subAccount ?? String(UInt64.random(in: 1_000_000_000...9_999_999_999)),
                                  key: key)
    }

    /// Reads a key file (Huawei's, or one `write(to:)` wrote): the simulator then accepts JWTs signed with its key.
    public static func load(file: String) throws -> MockHarmonyAccount {
        let bytes = try OpenSSLSupport.readFile(file)
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              let project = object["project_id"] as? String, let keyID = object["key_id"] as? String,
              let subAccount = object["sub_account"] as? String, let pem = object["private_key"] as? String else {
            throw SimulatorError.configuration("\(file): not a Huawei service-account key file (project_id, key_id, sub_account, private_key)")
        }
        return MockHarmonyAccount(projectID: project, keyID: keyID, subAccount: subAccount, key: try OpenSSLSupport.privateKey(pem: Array(pem.utf8)))
    }

    /// The key file as Huawei's API Console issues it.
    public func json() throws -> [UInt8] {
        let object: [String: String] = [
            "project_id": projectID, "key_id": keyID, "sub_account": subAccount,
            "private_key": String(decoding: try OpenSSLSupport.pkcs8PEM(key), as: UTF8.self),
            "auth_uri": "https://oauth-login.cloud.huawei.com/oauth2/v3/authorize",
            "token_uri": MockHarmonyJWT.audience,
            "auth_provider_cert_uri": "https://oauth-login.cloud.huawei.com/oauth2/v3/certs",
            "client_cert_uri": "https://oauth-login.cloud.huawei.com/oauth2/v3/x509?client_id=\(subAccount)",
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
        return [UInt8](data) + [0x0a]
    }

    /// Writes the key file (mode 0600: it holds a private key).
    public func write(to path: String) throws { try OpenSSLSupport.writeFile(path, try json(), mode: 0o600) }

    /// A PS256 JWT as Huawei's guide builds one; the parameters let tests break it.
    public func makeJWT(issuedAt: Int64 = Int64(Date().timeIntervalSince1970), lifetime: Int64 = 3600, issuer: String? = nil,
                        keyID: String? = nil, audience: String = MockHarmonyJWT.audience, algorithm: String = "PS256") throws -> String {
        let header = Base64URL.encode(Array(#"{"kid":"\#(keyID ?? self.keyID)","typ":"JWT","alg":"\#(algorithm)"}"#.utf8))
        let claims: [String: Any] = ["iss": issuer ?? subAccount, "aud": audience, "iat": issuedAt, "exp": issuedAt + lifetime]
        let claimBytes = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys, .withoutEscapingSlashes])
        let input = "\(header).\(Base64URL.encode([UInt8](claimBytes)))"
        let signature = try OpenSSLSupport.signSHA256(Array(input.utf8), key: key, pss: algorithm == "PS256")
        return "\(input).\(Base64URL.encode(signature))"
    }
}
