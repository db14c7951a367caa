import COpenSSL
import Foundation

/// Where the server's certificate comes from, and the files a client needs to trust it.
public struct MockTLSFiles: Sendable, Equatable {
    /// PEM certificate chain the server presents (leaf first).
    public var certificateFile: String
    /// PEM private key of that certificate.
    public var privateKeyFile: String
    /// PEM CA file a client should trust (nil when the caller brought its own certificate).
    public var caFile: String?
    /// PEM private key of that CA, kept so tests can issue client certificates (nil when not generated here).
    public var caKeyFile: String?

    public init(certificateFile: String, privateKeyFile: String, caFile: String? = nil, caKeyFile: String? = nil) {
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.caFile = caFile
        self.caKeyFile = caKeyFile
    }

    /// Makes a throwaway CA and a server certificate for 127.0.0.1, ::1 and localhost, and writes
    /// `ca.pem`, `ca-key.pem`, `server.pem` and `server-key.pem` into `directory`.
    public static func generate(in directory: String, days: Int = 30) throws -> MockTLSFiles {
        let caKey = try OpenSSLSupport.generateP256()
        defer { EVP_PKEY_free(caKey) }
        let caCert = try CertificateBuilder.make(
            subjectCN: "Herald MockAPNs Test CA", subjectUID: nil, publicKey: caKey, issuer: nil, issuerKey: caKey,
            isCA: true, serverSANs: nil, clientAuth: false, days: days)
        defer { X509_free(caCert) }
        let serverKey = try OpenSSLSupport.generateP256()
        defer { EVP_PKEY_free(serverKey) }
        let serverCert = try CertificateBuilder.make(
            subjectCN: "localhost", subjectUID: nil, publicKey: serverKey, issuer: caCert, issuerKey: caKey,
            isCA: false, serverSANs: "DNS:localhost,IP:127.0.0.1,IP:::1", clientAuth: false, days: days)
        defer { X509_free(serverCert) }
        let files = MockTLSFiles(
            certificateFile: (directory as NSString).appendingPathComponent("server.pem"),
            privateKeyFile: (directory as NSString).appendingPathComponent("server-key.pem"),
            caFile: (directory as NSString).appendingPathComponent("ca.pem"),
            caKeyFile: (directory as NSString).appendingPathComponent("ca-key.pem"))
        try OpenSSLSupport.writeFile(files.caFile!, try OpenSSLSupport.certificatePEM(caCert))
        try OpenSSLSupport.writeFile(files.caKeyFile!, try OpenSSLSupport.pkcs8PEM(caKey), mode: 0o600)
        try OpenSSLSupport.writeFile(files.certificateFile, try OpenSSLSupport.certificatePEM(serverCert))
        try OpenSSLSupport.writeFile(files.privateKeyFile, try OpenSSLSupport.pkcs8PEM(serverKey), mode: 0o600)
        return files
    }

    /// Issues a client certificate (for certificate-based auth) signed by the generated CA, with the bundle ID
    /// as subject UID and CN "Apple Push Services: <bundle>" as Apple's are. Writes `<name>.pem` and `<name>-key.pem`.
    public func issueClientCertificate(bundleID: String, name: String, in directory: String, days: Int = 30) throws -> (certificateFile: String, keyFile: String) {
        guard let caFile, let caKeyFile else { throw SimulatorError.configuration("no CA key to issue client certificates with") }
        let caCert = try CertificateBuilder.loadCertificate(caFile)
        defer { X509_free(caCert) }
        let caKey = try OpenSSLSupport.privateKey(pem: try OpenSSLSupport.readFile(caKeyFile))
        defer { EVP_PKEY_free(caKey) }
        let key = try OpenSSLSupport.generateP256()
        defer { EVP_PKEY_free(key) }
        let cert = try CertificateBuilder.make(
            subjectCN: "Apple Push Services: \(bundleID)", subjectUID: bundleID, publicKey: key, issuer: caCert, issuerKey: caKey,
            isCA: false, serverSANs: nil, clientAuth: true, days: days)
        defer { X509_free(cert) }
        let certPath = (directory as NSString).appendingPathComponent("\(name).pem")
        let keyPath = (directory as NSString).appendingPathComponent("\(name)-key.pem")
        try OpenSSLSupport.writeFile(certPath, try OpenSSLSupport.certificatePEM(cert))
        try OpenSSLSupport.writeFile(keyPath, try OpenSSLSupport.pkcs8PEM(key), mode: 0o600)
        return (certPath, keyPath)
    }
}

/// X.509 construction with OpenSSL; returned certificates are owned by the caller (X509_free).
enum CertificateBuilder {
    static func loadCertificate(_ path: String) throws -> OpaquePointer {
        let pem = try OpenSSLSupport.readFile(path)
        return try OpenSSLSupport.withMemoryBIO(pem) { bio in
            guard let cert = PEM_read_bio_X509(bio, nil, nil, nil) else { throw OpenSSLSupport.lastError("PEM_read_bio_X509 \(path)") }
            return cert
        }
    }

    static func make(subjectCN: String, subjectUID: String?, publicKey: OpaquePointer, issuer: OpaquePointer?, issuerKey: OpaquePointer,
                     isCA: Bool, serverSANs: String?, clientAuth: Bool, days: Int) throws -> OpaquePointer {
        guard let cert = X509_new() else { throw OpenSSLSupport.lastError("X509_new") }
        var ok = false
        defer { if !ok { X509_free(cert) } }
        X509_set_version(cert, 2)
        var serialBytes = [UInt8](repeating: 0, count: 16)
        RAND_bytes(&serialBytes, 16)
        serialBytes[0] &= 0x7f
        let serial = BN_bin2bn(serialBytes, 16, nil)
        BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert))
        BN_free(serial)
        X509_gmtime_adj(X509_getm_notBefore(cert), -3600)
        X509_gmtime_adj(X509_getm_notAfter(cert), days * 86_400)
        X509_set_pubkey(cert, publicKey)
        let name = X509_get_subject_name(cert)
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, subjectCN, -1, -1, 0)
        if let subjectUID { X509_NAME_add_entry_by_txt(name, "UID", MBSTRING_UTF8, subjectUID, -1, -1, 0) }
        X509_set_issuer_name(cert, issuer.map { X509_get_subject_name($0) } ?? name)

        var context = X509V3_CTX()
        copenssl_mock_x509v3_set_ctx_nodb(&context)
        X509V3_set_ctx(&context, issuer ?? cert, cert, nil, nil, 0)
        var extensions: [(Int32, String)] = []
        if isCA {
            extensions.append((NID_basic_constraints, "critical,CA:TRUE"))
            extensions.append((NID_key_usage, "critical,keyCertSign,cRLSign"))
        } else {
            extensions.append((NID_basic_constraints, "critical,CA:FALSE"))
            extensions.append((NID_key_usage, "critical,digitalSignature,keyAgreement"))
            extensions.append((NID_ext_key_usage, clientAuth ? "clientAuth" : "serverAuth"))
        }
        if let serverSANs { extensions.append((NID_subject_alt_name, serverSANs)) }
        extensions.append((NID_subject_key_identifier, "hash"))
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else { throw OpenSSLSupport.lastError("X509V3_EXT_conf_nid \(value)") }
            X509_add_ext(cert, ext, -1)
            X509_EXTENSION_free(ext)
        }
        guard X509_sign(cert, issuerKey, EVP_sha256()) > 0 else { throw OpenSSLSupport.lastError("X509_sign") }
        ok = true
        return cert
    }
}
