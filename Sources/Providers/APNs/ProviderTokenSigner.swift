import PushCore

/// Makes APNs provider tokens: `base64url({"alg":"ES256","kid":K}).base64url({"iss":T,"iat":N}).base64url(r||s)`.
/// Key and team IDs are checked up front so a typo fails at start-up, not as 403s from Apple.
public struct ProviderTokenSigner: Sendable {
    public let keyID: String
    public let teamID: String
    public let key: SigningKey

    public init(keyID: String, teamID: String, key: SigningKey) throws(CredentialError) {
        guard Self.isAppleID(keyID) else { throw .badKeyID(keyID) }
        guard Self.isAppleID(teamID) else { throw .badTeamID(teamID) }
        self.keyID = keyID
        self.teamID = teamID
        self.key = key
    }

    public func sign(issuedAt: Int64) throws(CredentialError) -> String {
        var header = JSONWriter(capacity: 40)
        header.beginObject(); header.field("alg", "ES256"); header.field("kid", keyID); header.endObject()
        var claims = JSONWriter(capacity: 40)
        claims.beginObject(); claims.field("iss", teamID); claims.field("iat", issuedAt); claims.endObject()
        let signingInput = base64URLEncoded(header.bytes) + "." + base64URLEncoded(claims.bytes)
        let signature = try key.signES256(Array(signingInput.utf8))
        return signingInput + "." + base64URLEncoded(signature)
    }

    /// Apple's key and team IDs: exactly 10 ASCII letters or digits.
    public static func isAppleID(_ s: String) -> Bool {
        var n = 0
        for b in s.utf8 {
            let ok = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
            guard ok else { return false }
            n += 1
        }
        return n == 10
    }
}

extension SigningKey {
    /// A provider token in one call (prefer `ProviderTokenCache`: one token per ~50 minutes, not per request).
    public func sign(keyID: String, teamID: String, issuedAt: Int64) throws(CredentialError) -> String {
        try ProviderTokenSigner(keyID: keyID, teamID: teamID, key: self).sign(issuedAt: issuedAt)
    }
}
