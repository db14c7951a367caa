import COpenSSL
import Foundation

/// Small helpers over OpenSSL's C API used by the key, certificate and JWT code.
enum OpenSSLSupport {
    /// The queued OpenSSL error text (and clears the queue), so failures say what OpenSSL said.
    static func lastError(_ context: String) -> SimulatorError {
        var buffer = [CChar](repeating: 0, count: 1024)
        let count = copenssl_drain_errors(&buffer, buffer.count)
        let detail = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return .openSSL(count == 0 ? context : "\(context): \(detail)")
    }

    static func clearErrors() { ERR_clear_error() }

    /// Everything written into a memory BIO, as bytes.
    static func drain(_ bio: OpaquePointer) -> [UInt8] {
        var pointer: UnsafeMutablePointer<CChar>?
        let length = copenssl_bio_get_mem_data(bio, &pointer)
        guard length > 0, let pointer else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: Int(length)))
    }

    static func withMemoryBIO<T>(_ bytes: [UInt8], _ body: (OpaquePointer) throws -> T) throws -> T {
        guard let bio = bytes.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }) else {
            throw lastError("BIO_new_mem_buf")
        }
        defer { BIO_free(bio) }
        // BIO_new_mem_buf does not copy; `bytes` outlives the call because body runs inside this scope.
        return try bytes.withUnsafeBytes { _ in try body(bio) }
    }

    static func readFile(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SimulatorError.file("cannot read \(path)")
        }
        return [UInt8](data)
    }

    static func writeFile(_ path: String, _ bytes: [UInt8], mode: Int = 0o644) throws {
        let url = URL(fileURLWithPath: path)
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        } catch {
            throw SimulatorError.file("cannot write \(path): \(error)")
        }
    }

    /// Parses a PEM private key (PKCS#8 `.p8`, SEC1 or traditional).
    static func privateKey(pem: [UInt8]) throws -> OpaquePointer {
        try withMemoryBIO(pem) { bio in
            guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else { throw lastError("PEM_read_bio_PrivateKey") }
            return key
        }
    }

    /// Parses a PEM public key, or takes the public half of a PEM private key (so a `.p8` works too).
    static func publicKey(pem: [UInt8]) throws -> OpaquePointer {
        let text = String(decoding: pem, as: UTF8.self)
        if text.contains("PRIVATE KEY") { return try privateKey(pem: pem) }
        return try withMemoryBIO(pem) { bio in
            guard let key = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else { throw lastError("PEM_read_bio_PUBKEY") }
            return key
        }
    }

    static func pkcs8PEM(_ key: OpaquePointer) throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw lastError("BIO_new") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else { throw lastError("PEM_write_bio_PKCS8PrivateKey") }
        return drain(bio)
    }

    static func publicKeyPEM(_ key: OpaquePointer) throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw lastError("BIO_new") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PUBKEY(bio, key) == 1 else { throw lastError("PEM_write_bio_PUBKEY") }
        return drain(bio)
    }

    static func certificatePEM(_ cert: OpaquePointer) throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw lastError("BIO_new") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, cert) == 1 else { throw lastError("PEM_write_bio_X509") }
        return drain(bio)
    }

    /// A signature over SHA-256 of `message` with `key`: ECDSA (DER) for EC keys, PKCS#1 v1.5 for RSA ones (RS256),
    /// or with `pss` RSA-PSS (PS256: MGF1-SHA-256, a 32-byte salt).
    static func signSHA256(_ message: [UInt8], key: OpaquePointer, pss: Bool = false) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw lastError("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        guard EVP_DigestSignInit(context, &keyContext, EVP_sha256(), nil, key) == 1 else { throw lastError("EVP_DigestSignInit") }
        if pss, !usePSS(keyContext) { throw lastError("RSA-PSS parameters") }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { throw lastError("EVP_DigestSign") }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else { throw lastError("EVP_DigestSign") }
        return Array(signature.prefix(length))
    }

    /// Verifies a `signSHA256` signature; any failure (also a malformed signature) is false, with the error queue cleared.
    static func verifySHA256(_ message: [UInt8], signature: [UInt8], key: OpaquePointer, pss: Bool = false) -> Bool {
        guard !signature.isEmpty, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        guard EVP_DigestVerifyInit(context, &keyContext, EVP_sha256(), nil, key) == 1, !pss || usePSS(keyContext) else { clearErrors(); return false }
        let ok = EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
        clearErrors()
        return ok
    }

    /// RSA-PSS as JWS' PS256 has it (RFC 7518 3.5): MGF1 with SHA-256, the salt as long as the hash.
    private static func usePSS(_ keyContext: OpaquePointer?) -> Bool {
        EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1
            && EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_DIGEST) == 1
            && EVP_PKEY_CTX_set_rsa_mgf1_md(keyContext, EVP_sha256()) == 1
    }

    static func generateP256() throws -> OpaquePointer {
        guard let key = copenssl_mock_generate_p256() else { throw lastError("EVP_EC_gen(P-256)") }
        return key
    }
}

/// base64url without padding (RFC 7515), as JWTs use.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var base = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base.count % 4 != 0 { base += "=" }
        guard let data = Data(base64Encoded: base) else { return nil }
        return [UInt8](data)
    }
}
