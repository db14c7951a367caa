import Foundation
import TLS

extension Configuration {
    /// `redis.tls`: how a `rediss://` URL proves the server (and, for mutual TLS, Herald). TLS itself is on exactly
    /// when the URL is `rediss://`; these keys with a `redis://` URL are a configuration problem, never a silent
    /// plaintext connection.
    public struct RedisTLSSettings: Sendable, Equatable {
        public init() {}
        /// PEM CA bundle trusted instead of the system store; nil trusts the system store.
        public var caFile: String?
        /// Client certificate (chain) and key, PEM, for servers that ask for one (`tls-auth-clients yes`).
        public var certFile: String?
        public var keyFile: String?
        /// Name sent as SNI and checked against the server certificate; nil uses the URL's host.
        public var serverName: String?
        /// Off only for diagnostics: without verification anyone on the path can read and change the queue.
        public var verify = true

        /// True when any key differs from its default.
        public var isSet: Bool { self != RedisTLSSettings() }

        /// The OpenSSL configuration: with a CA file only that CA is trusted (a private CA should not also accept
        /// every public one), without one the system store.
        public var tlsConfiguration: TLSConfiguration {
            TLSConfiguration(caFile: caFile, useSystemTrustStore: caFile == nil, verifyPeer: verify,
                             clientCertificateFile: certFile, clientKeyFile: keyFile, serverName: serverName)
        }

        /// Everything wrong with these settings for `url`, each naming its key; empty when a client can be built.
        public func problems(url: String) -> [String] {
            var problems: [String] = []
            let isTLS = url.lowercased().hasPrefix("rediss://")
            if isSet && !isTLS {
                problems.append("redis.tls is set but redis.url is not rediss:// (TLS is on only for rediss:// URLs)")
            }
            for (key, path) in [("ca_file", caFile), ("cert_file", certFile), ("key_file", keyFile)] {
                guard let path else { continue }
                if path.isEmpty {
                    problems.append("redis.tls.\(key) is empty")
                } else if !FileManager.default.fileExists(atPath: path) {
                    problems.append("redis.tls.\(key) \(path): no such file")
                } else if !FileManager.default.isReadableFile(atPath: path) {
                    problems.append("redis.tls.\(key) \(path): not readable by this user")
                }
            }
            if certFile != nil && keyFile == nil { problems.append("redis.tls.cert_file needs redis.tls.key_file (the same file if it holds both)") }
            if keyFile != nil && certFile == nil { problems.append("redis.tls.key_file needs redis.tls.cert_file") }
            if let serverName, serverName.isEmpty { problems.append("redis.tls.server_name is empty (leave it out to use the URL's host)") }
            if problems.isEmpty && isTLS {
                // Loads the CA, certificate and key as a connection would: a bad PEM or a key of another certificate shows here.
                do { _ = try TLSContext(tlsConfiguration, alpn: []) } catch { problems.append("redis.tls: \(error.message)") }
            }
            return problems
        }
    }
}
