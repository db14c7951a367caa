import Basics
import Foundation
import Glibc
import Settings

/// `herald mock-echo ...`: runs the echo service's simulator until SIGTERM/SIGINT.
public enum MockEchoCommand {
    public static let command = Command(MockEchoOptions.spec) { parsed in run(try MockEchoOptions(parsed)) }

    static func run(_ options: MockEchoOptions) -> Int32 {
        func fail(_ text: String, code: Int32) -> Int32 { CommandSupport.fail("mock-echo", text, code: code) }
        let tls: MockTLSFiles
        let caFile: String?
        do {
            (tls, caFile) = try CommandSupport.tlsFiles(certificate: options.server.certFile, key: options.server.keyFile,
                                                        generateIn: options.generateTLS, prefix: "herald-mock-echo")
        } catch { return fail("TLS: \(error)", code: 69) }
        let server: MockEchoServer
        do { server = try MockEchoServer(tls: tls, host: options.server.host, port: options.server.port) } catch {
            return fail("cannot start: \(error)", code: 69)
        }
        var ready: [String: Any] = ["port": server.port, "pid": Int(getpid()), "host": options.server.host, "base_url": server.baseURL]
        if let caFile { ready["ca_file"] = caFile }
        return CommandSupport.serve(ready, readyFile: options.readyFile, command: "mock-echo",
                                    wait: { CommandSupport.waitForTermination(onHangup: {}) }, stop: server.stop)
    }
}

/// Parsed `herald mock-echo` flags.
struct MockEchoOptions {
    var server = ServerFlags()
    var generateTLS: String?
    var readyFile: String?

    static var settings: [Setting<MockEchoOptions>] {
        ServerFlags.listen(at: \.server) + ServerFlags.certificate(at: \.server) + [
            .option("generate-tls", \.generateTLS, "dir", as: CommandSupport.absolute, "Write ca.pem, ca-key.pem, server.pem and server-key.pem to this directory (default without --cert: a temporary directory)."),
            .option("ready-file", \.readyFile, "file", "Write the ready JSON line to this file once listening."),
        ]
    }

    static let spec = CommandSpec(
        usageName: "herald mock-echo",
        abstract: "Run the echo service's simulator (POST /echo, answered by the token's prefix).",
        discussion: """
        An HTTPS server (HTTP/2) that answers POST /echo by the token's first three characters: 410, 429, 500, 503
        or 400, else 200 with the body echoed. Prints one JSON line when ready: {"base_url":...,"ca_file":...,
        "host":...,"pid":...,"port":...}. Runs until SIGTERM/SIGINT (exit 0). See docs/mock-echo.md.
        Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write.
        """,
        options: SettingsReader.options(settings))

    init(_ args: ParsedArguments) throws(UsageError) {
        try SettingsReader.apply(Self.settings, arguments: args, to: &self)
        try server.check()
    }
}
