import APNs
import COpenSSL
import Foundation
import PushCore
import Testing

/// Verifies a JWT's ES256 signature with OpenSSL's own verifier: r||s back to DER, then EVP_DigestVerify.
func verifyJWT(_ jwt: String, publicKeyPEM: String) -> Bool {
    let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3, let raw = base64URLDecoded(String(parts[2])), raw.count == 64 else { return false }
    let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
    guard let sig = ECDSA_SIG_new() else { return false }
    defer { ECDSA_SIG_free(sig) }
    let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
    let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
    guard ECDSA_SIG_set0(sig, r, s) == 1 else { return false }
    var derPointer: UnsafeMutablePointer<UInt8>?
    let derLength = i2d_ECDSA_SIG(sig, &derPointer)
    guard derLength > 0, let derPointer else { return false }
    defer { CRYPTO_free(derPointer, #file, #line) }
    let pemBytes = Array(publicKeyPEM.utf8)
    let key: OpaquePointer? = pemBytes.withUnsafeBytes { b in
        let bio = BIO_new_mem_buf(b.baseAddress, Int32(b.count))
        defer { BIO_free(bio) }
        return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
    }
    guard let key else { return false }
    defer { EVP_PKEY_free(key) }
    guard let ctx = EVP_MD_CTX_new() else { return false }
    defer { EVP_MD_CTX_free(ctx) }
    guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, key) == 1 else { return false }
    let ok = signingInput.withUnsafeBufferPointer { m in
        EVP_DigestVerify(ctx, derPointer, Int(derLength), m.baseAddress, m.count)
    }
    ERR_clear_error()
    return ok == 1
}

func decodedJSON(_ part: Substring) -> String {
    String(decoding: base64URLDecoded(String(part)) ?? [], as: UTF8.self)
}

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("apns-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func credentialError(_ body: () throws -> Void) -> CredentialError? {
    do { try body(); return nil } catch { return error as? CredentialError }
}

@Suite struct SigningTests {
    @Test func tokenHasAppleShapeAndVerifies() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pem = try KeyGenerator.generateP256PKCS8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let path = dir.appendingPathComponent("AuthKey_ABCDE12345.p8").path
        try pem.write(toFile: path, atomically: true, encoding: .utf8)
        let key = try SigningKey(p8File: path)
        let signer = try ProviderTokenSigner(keyID: "ABCDE12345", teamID: "TEAM123456", key: key)
        let jwt = try signer.sign(issuedAt: 1_700_000_000)
        let parts = jwt.split(separator: ".")
        #expect(parts.count == 3)
        #expect(decodedJSON(parts[0]) == #"{"alg":"ES256","kid":"ABCDE12345"}"#)
        #expect(decodedJSON(parts[1]) == #"{"iss":"TEAM123456","iat":1700000000}"#)
        #expect(!jwt.contains("=") && !jwt.contains("+") && !jwt.contains("/"))

        let publicPEM = try KeyGenerator.publicKeyPEM(fromPrivatePEM: pem)
        #expect(verifyJWT(jwt, publicKeyPEM: publicPEM))
        // a different key must not verify it
        let otherPublic = try KeyGenerator.publicKeyPEM(fromPrivatePEM: KeyGenerator.generateP256PKCS8PEM())
        #expect(!verifyJWT(jwt, publicKeyPEM: otherPublic))
        // a tampered claim must not verify
        let tampered = "\(parts[0]).\(base64URLEncoded(Array(#"{"iss":"TEAM123456","iat":1700000001}"#.utf8))).\(parts[2])"
        #expect(!verifyJWT(tampered, publicKeyPEM: publicPEM))
    }

    @Test func manySignaturesAllVerifyAndAre64Bytes() throws {
        // r or s with leading zero bytes appear about 1 in 128 signatures: padding must keep them valid
        let pem = try KeyGenerator.generateP256PKCS8PEM()
        let key = try SigningKey(pem: pem)
        let publicPEM = try #require(key.publicKeyPEM())
        let signer = try ProviderTokenSigner(keyID: "ABCDE12345", teamID: "TEAM123456", key: key)
        for i in 0..<300 {
            let jwt = try signer.sign(issuedAt: Int64(i))
            #expect(verifyJWT(jwt, publicKeyPEM: publicPEM), "signature \(i)")
        }
    }

    @Test func sec1ECKeyIsAcceptedToo() throws {
        // `openssl ecparam -genkey` writes "BEGIN EC PRIVATE KEY" (SEC1), which people sometimes paste
        let pkcs8 = try KeyGenerator.generateP256PKCS8PEM()
        let bytes = Array(pkcs8.utf8)
        let sec1: String = try bytes.withUnsafeBytes { b in
            let input = try #require(BIO_new_mem_buf(b.baseAddress, Int32(b.count)))
            defer { BIO_free(input) }
            let pkey = try #require(PEM_read_bio_PrivateKey(input, nil, nil, nil))
            defer { EVP_PKEY_free(pkey) }
            let output = try #require(BIO_new(BIO_s_mem()))
            defer { BIO_free(output) }
            #expect(PEM_write_bio_PrivateKey_traditional(output, pkey, nil, nil, 0, nil, nil) == 1)
            var pointer: UnsafeMutablePointer<CChar>?
            let n = copenssl_bio_get_mem_data(output, &pointer)
            return String(decoding: UnsafeRawBufferPointer(start: pointer, count: n), as: UTF8.self)
        }
        #expect(sec1.hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
        let key = try SigningKey(pem: sec1)
        let signer = try ProviderTokenSigner(keyID: "ABCDE12345", teamID: "TEAM123456", key: key)
        #expect(verifyJWT(try signer.sign(issuedAt: 1), publicKeyPEM: try KeyGenerator.publicKeyPEM(fromPrivatePEM: pkcs8)))
    }

    @Test func clearCredentialErrors() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("nope.p8").path
        #expect(credentialError { _ = try SigningKey(p8File: missing) } == .fileNotFound(path: missing))

        let notPEM = dir.appendingPathComponent("garbage.p8").path
        try Data([0x30, 0x82, 0x01, 0x00]).write(to: URL(fileURLWithPath: notPEM))
        #expect(credentialError { _ = try SigningKey(p8File: notPEM) } == .notPEM)

        let broken = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        if case .unreadableKey? = credentialError({ _ = try SigningKey(pem: broken) }) {} else {
            Issue.record("corrupt PEM should be unreadableKey")
        }

        let rsa = try KeyGenerator.generateRSAPKCS8PEM(bits: 2048)
        let rsaError = credentialError { _ = try SigningKey(pem: rsa) }
        #expect(rsaError == .notAnECKey(type: "an RSA key"))
        #expect(rsaError?.description.contains("RSA") == true)

        let p384 = try KeyGenerator.generateECPKCS8PEM(curve: "P-384")
        #expect(credentialError { _ = try SigningKey(pem: p384) } == .wrongCurve("secp384r1"))

        let key = try SigningKey(pem: KeyGenerator.generateP256PKCS8PEM())
        for bad in ["ABCDE1234", "ABCDE123456", "ABCDE-1234", "", "ÄBCDE12345"] {
            #expect(credentialError { _ = try ProviderTokenSigner(keyID: bad, teamID: "TEAM123456", key: key) } == .badKeyID(bad))
            #expect(credentialError { _ = try ProviderTokenSigner(keyID: "ABCDE12345", teamID: bad, key: key) } == .badTeamID(bad))
        }
    }

    @Test func base64URLRoundTrip() {
        for n in 0..<20 {
            let bytes = (0..<n).map { UInt8(($0 * 37 + n) & 0xFF) }
            #expect(base64URLDecoded(base64URLEncoded(bytes)) == bytes)
        }
        #expect(base64URLEncoded(Array("?>>".utf8)) == "Pz4-")
        #expect(base64URLDecoded("a+b") == nil)
    }
}

@Suite struct ProviderTokenVerifierTests {
    @Test func verifierAgreesWithOpenSSLDirectly() throws {
        let pem = try KeyGenerator.generateP256PKCS8PEM()
        let key = try SigningKey(pem: pem)
        let publicPEM = try KeyGenerator.publicKeyPEM(fromPrivatePEM: pem)
        let verifying = try VerifyingKey(publicKeyPEM: publicPEM)
        let jwt = try key.sign(keyID: "ABCDE12345", teamID: "TEAM123456", issuedAt: 1_700_000_123)
        #expect(verifyJWT(jwt, publicKeyPEM: publicPEM))
        let claims = ProviderTokenVerifier.verify(jwt, key: verifying)
        #expect(claims == ProviderTokenClaims(algorithm: "ES256", keyID: "ABCDE12345", teamID: "TEAM123456", issuedAt: 1_700_000_123))

        let other = try VerifyingKey(publicKeyPEM: KeyGenerator.publicKeyPEM(fromPrivatePEM: KeyGenerator.generateP256PKCS8PEM()))
        #expect(ProviderTokenVerifier.verify(jwt, key: other) == nil)
        #expect(ProviderTokenVerifier.decode(jwt)?.teamID == "TEAM123456")

        var corrupted = Array(jwt.utf8)
        corrupted[corrupted.count - 5] = corrupted[corrupted.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(ProviderTokenVerifier.verify(String(decoding: corrupted, as: UTF8.self), key: verifying) == nil)
        for garbage in ["", "a.b", "a.b.c", "...", "\(jwt).x", String(jwt.dropLast(2))] {
            #expect(ProviderTokenVerifier.verify(garbage, key: verifying) == nil, "\(garbage)")
        }
        #expect(throws: CredentialError.notPEM) { try VerifyingKey(publicKeyPEM: pem) }
    }
}
