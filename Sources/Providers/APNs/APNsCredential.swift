import Foundation
import PushCore
import TLS

/// Token auth: the `.p8` signing key and the IDs that go into each provider token (an app's `token`).
public struct APNsTokenAuth: Sendable, Equatable {
    public var teamID: String
    public var keyID: String
    public var keyFile: String
    public var refreshMinutes = 50

    public init(teamID: String, keyID: String, keyFile: String, refreshMinutes: Int = 50) {
        self.teamID = teamID
        self.keyID = keyID
        self.keyFile = keyFile
        self.refreshMinutes = refreshMinutes
    }
}

/// Certificate auth: a client certificate and key, as PEM files or one PKCS#12 bundle (an app's `certificate`).
public struct APNsCertificateAuth: Sendable, Equatable {
    public var pemFile: String? = nil
    public var keyFile: String? = nil
    public var pkcs12File: String? = nil
    /// Never logged. `passwordEnv` names an environment variable that holds it instead.
    public var password: String? = nil
    public var passwordEnv: String? = nil

    public init() {}

    public var resolvedPassword: String? {
        if let passwordEnv, let value = ProcessInfo.processInfo.environment[passwordEnv] { return value }
        return password
    }
}

/// How an APNs app authenticates: token auth or a client certificate (one of them; neither only in tests).
public struct APNsAuth: Sendable, Equatable {
    public var token: APNsTokenAuth?
    public var certificate: APNsCertificateAuth?

    public init(token: APNsTokenAuth? = nil, certificate: APNsCertificateAuth? = nil) {
        self.token = token
        self.certificate = certificate
    }

    /// The files the credential reads (for the permission warnings).
    public var files: [String] {
        var files: [String] = []
        if let token { files.append(token.keyFile) }
        if let certificate { files += [certificate.pemFile, certificate.keyFile, certificate.pkcs12File].compactMap { $0 } }
        return files
    }
}

/// An app's loaded APNs credential: the token cache (token auth) or the client-certificate TLS settings
/// (certificate auth). Loading reads the key files and proves them (one token signed, the TLS context made), so
/// `herald check-config` and the worker fail the same way.
public struct APNsCredential: Sendable {
    public let tokenCache: ProviderTokenCache?
    public let tls: TLSConfiguration

    public init(tokenCache: ProviderTokenCache?, tls: TLSConfiguration) {
        self.tokenCache = tokenCache
        self.tls = tls
    }

    /// `caFile`: the CA bundle for APNs' hosts (`apns.ca_file`), nil for the system's.
    public static func load(_ auth: APNsAuth, caFile: String?) throws -> APNsCredential {
        var tls = TLSConfiguration(caFile: caFile)
        var cache: ProviderTokenCache? = nil
        if let token = auth.token {
            let key = try SigningKey(p8File: token.keyFile)
            cache = try ProviderTokenCache(
                keyID: token.keyID, teamID: token.teamID, key: key, refreshAfterSeconds: Int64(token.refreshMinutes) * 60)
            _ = try cache?.token()
        } else if let certificate = auth.certificate {
            tls.clientCertificateFile = certificate.pemFile
            tls.clientKeyFile = certificate.keyFile ?? certificate.pemFile
            tls.pkcs12File = certificate.pkcs12File
            tls.pkcs12Password = certificate.resolvedPassword
            if certificate.pkcs12File != nil {
                tls.clientCertificateFile = nil
                tls.clientKeyFile = nil
            }
            _ = try TLSContext(tls)
        }
        return APNsCredential(tokenCache: cache, tls: tls)
    }
}
