import COpenSSL

// PEM keys over OpenSSL, shared by the providers' signers (APNs' ES256 key, FCM's RS256 service account).

/// Parses a PEM private key of any type (the caller checks the type and owns the result).
public func readPrivateKeyPEM(_ pem: String) throws(CredentialError) -> OpaquePointer {
    guard pem.contains("-----BEGIN "), pem.contains("PRIVATE KEY-----") else { throw .notPEM }
    ERR_clear_error()
    let bytes = Array(pem.utf8)
    let key: OpaquePointer? = bytes.withUnsafeBytes { raw in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
        defer { BIO_free(bio) }
        return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
    }
    guard let key else { throw .unreadableKey(detail: openSSLErrorText()) }
    return key
}

/// The public half of a key as SubjectPublicKeyInfo PEM.
public func publicKeyPEM(of pkey: OpaquePointer) -> String? {
    guard let bio = BIO_new(BIO_s_mem()) else { return nil }
    defer { BIO_free(bio) }
    guard PEM_write_bio_PUBKEY(bio, pkey) == 1 else { return nil }
    return readAll(bio)
}

/// Reads a memory BIO's whole contents as text.
public func readAll(_ bio: OpaquePointer) -> String {
    var pointer: UnsafeMutablePointer<CChar>?
    let length = copenssl_bio_get_mem_data(bio, &pointer)
    guard let pointer, length > 0 else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: pointer, count: Int(length)), as: UTF8.self)
}
