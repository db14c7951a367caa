import Foundation

/// What a verified provider token says; the server caches it per connection by the token string.
struct VerifiedProviderToken {
    let token: String
    let key: MockProviderKey
    let issuedAt: Int64
    /// The whole `authorization` header value it came in, compared byte for byte on later requests.
    var authorization = ""
}

/// Checks a JWT against the registered keys in the order APNs does: key and team first, then the signature;
/// the age of `iat` is checked by the caller on every request (a cached token still expires).
struct ProviderTokenVerifier {
    let keys: [String: MockProviderKey]

    enum Failure: Error { case invalid }

    func verify(_ token: String) -> Result<VerifiedProviderToken, Failure> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = Base64URL.decode(parts[0]),
              let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
              let claims = try? JSONSerialization.jsonObject(with: Data(claimBytes)) as? [String: Any],
              header["alg"] as? String == "ES256",
              let kid = header["kid"] as? String,
              let iss = claims["iss"] as? String,
              let iatNumber = claims["iat"] as? NSNumber
        else { return .failure(.invalid) }
        guard let key = keys[kid], key.teamID == iss else { return .failure(.invalid) }
        let input = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard ES256.verify(input, joseSignature: signature, key: key.key) else { return .failure(.invalid) }
        return .success(VerifiedProviderToken(token: token, key: key, issuedAt: iatNumber.int64Value))
    }
}
