import Foundation
import Glibc

/// PEM files made by the `openssl` CLI for one test: a CA, a server certificate it signed for `localhost` and
/// 127.0.0.1, a client certificate it signed, a second unrelated CA (the "wrong CA"), and a self-signed server
/// certificate. EC P-256 keys, so making them takes milliseconds.
public struct TLSTestCertificates: Sendable {
    public let directory: String
    public var caFile: String { directory + "/ca.crt" }
    public var serverCertificate: String { directory + "/server.crt" }
    public var serverKey: String { directory + "/server.key" }
    public var clientCertificate: String { directory + "/client.crt" }
    public var clientKey: String { directory + "/client.key" }
    public var otherCAFile: String { directory + "/other-ca.crt" }
    public var selfSignedCertificate: String { directory + "/self.crt" }
    public var selfSignedKey: String { directory + "/self.key" }

    public init(directory: String) throws {
        self.directory = directory
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for (name, subject) in [("ca", "/CN=Herald Test CA"), ("other-ca", "/CN=Some Other CA")] {
            try Self.openssl(["req", "-x509"] + curve + ["-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).crt",
                                                     "-days", "2", "-subj", subject, "-addext", "basicConstraints=critical,CA:TRUE",
                                                     "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        }
        try Self.openssl(["req", "-x509"] + curve + ["-keyout", selfSignedKey, "-out", selfSignedCertificate, "-days", "2",
                                                 "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        for (name, usage) in [("server", "serverAuth"), ("client", "clientAuth")] {
            let extensions = "\(directory)/\(name).ext"
            let san = name == "server" ? "subjectAltName=DNS:localhost,IP:127.0.0.1\n" : ""
            try Data("basicConstraints=CA:FALSE\nextendedKeyUsage=\(usage)\n\(san)".utf8).write(to: URL(fileURLWithPath: extensions))
            try Self.openssl(["req", "-new"] + curve + ["-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).csr",
                                                    "-subj", name == "server" ? "/CN=localhost" : "/CN=herald-worker"])
            try Self.openssl(["x509", "-req", "-in", "\(directory)/\(name).csr", "-CA", caFile, "-CAkey", "\(directory)/ca.key",
                              "-CAcreateserial", "-out", "\(directory)/\(name).crt", "-days", "2", "-extfile", extensions])
        }
    }

    static func openssl(_ arguments: [String]) throws {
        let result = try runProgram("openssl", arguments, seconds: 30)
        if result.status != 0 { throw TestSupportError("openssl \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.output)") }
    }
}

/// A redis-server of the test's own that speaks only TLS (`--port 0 --tls-port P`), on a free loopback port,
/// started and stopped by pid. `requireClientCertificate` is `--tls-auth-clients yes`; `selfSigned` serves the
/// self-signed certificate instead of the CA-signed one.
public final class RedisTLSServer: @unchecked Sendable {
    public let port: Int
    public let directory: String
    public let certificates: TLSTestCertificates
    public let requireClientCertificate: Bool
    public let selfSigned: Bool
    private var child: ChildProcess?

    public init(requireClientCertificate: Bool = false, selfSigned: Bool = false, certificates: TLSTestCertificates? = nil) throws {
        port = freeLoopbackPort()
        directory = makeTemporaryDirectory("herald-redis-tls")
        self.certificates = try certificates ?? TLSTestCertificates(directory: directory)
        self.requireClientCertificate = requireClientCertificate
        self.selfSigned = selfSigned
        try start()
    }

    /// `rediss://` on 127.0.0.1; the server certificate names both `localhost` and 127.0.0.1.
    public var url: String { "rediss://127.0.0.1:\(port)/0" }

    /// Starts (or restarts) the server on the same port.
    public func start() throws {
        guard let binary = which("redis-server") else { throw TestSupportError("redis-server is not installed (run scripts/setup)") }
        let arguments = [
            "--port", "0", "--tls-port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", directory, "--daemonize", "no",
            "--tls-cert-file", selfSigned ? certificates.selfSignedCertificate : certificates.serverCertificate,
            "--tls-key-file", selfSigned ? certificates.selfSignedKey : certificates.serverKey,
            "--tls-ca-cert-file", certificates.caFile,
            "--tls-auth-clients", requireClientCertificate ? "yes" : "no",
        ]
        let process = try ChildProcess(name: "redis-tls-\(port)", executable: binary, arguments: arguments)
        child = process
        // Listening is enough: redis-server binds its port only once it is ready to serve.
        let ready = waitUntil(seconds: 10) { process.isRunning && loopbackAccepts(port: port) }
        if !ready {
            _ = process.stop(grace: 2)
            throw TestSupportError("redis-server (TLS) on port \(port) did not start: \(process.output)")
        }
    }

    public func stop() {
        _ = child?.stop(grace: 5)
        child = nil
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

}
