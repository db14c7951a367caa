import Basics
import Foundation
import Glibc
import Settings

/// `herald mock-expo ...`: runs the Expo push service simulator until SIGTERM/SIGINT.
public enum MockExpoCommand {
    /// `herald mock-expo`: parsing, `--help` and usage errors as for every herald command.
    public static let command = Command(MockExpoOptions.spec) { parsed in run(try MockExpoOptions(parsed)) }

    /// Starts the server, writes its access token to a file (unless `--no-access-token`), prints the ready line and
    /// serves until SIGTERM/SIGINT.
    static func run(_ options: MockExpoOptions) -> Int32 {
        func fail(_ text: String, code: Int32) -> Int32 { CommandSupport.fail("mock-expo", text, code: code) }
        var configuration = options.configuration
        var caFile: String?
        let directory: String
        do {
            directory = try options.generateTLS ?? CommandSupport.temporaryDirectory(prefix: "herald-mock-expo")
            let (tls, ca) = try CommandSupport.tlsFiles(certificate: options.server.certFile, key: options.server.keyFile,
                                                        generateIn: directory, prefix: "herald-mock-expo")
            configuration.tls = tls
            caFile = ca
        } catch { return fail("TLS: \(error)", code: 69) }
        configuration.host = options.server.host
        configuration.port = options.server.port
        var tokenFile: String?
        if !options.noAccessToken {
            let token = options.accessToken ?? (0..<40).map { _ in String("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".randomElement()!) }.joined()
            configuration.accessToken = token
            let file = (directory as NSString).appendingPathComponent("expo-access-token")
            guard FileManager.default.createFile(atPath: file, contents: Data(token.utf8), attributes: [.posixPermissions: 0o600]) else {
                return fail("cannot write \(file)", code: 73)
            }
            tokenFile = file
        }
        let server: MockExpoServer
        do { server = try MockExpoServer(configuration: configuration) } catch { return fail("cannot start: \(error)", code: 69) }
        var ready: [String: Any] = ["port": server.port, "pid": Int(getpid()), "host": configuration.host, "base_url": server.baseURL,
                                    "send_url": server.baseURL + ExpoCore.sendPath, "receipts_url": server.baseURL + ExpoCore.receiptsPath,
                                    "stats_url": server.baseURL + "/_mock/stats"]
        if let caFile { ready["ca_file"] = caFile }
        if let tokenFile { ready["access_token_file"] = tokenFile }
        return CommandSupport.serve(ready, readyFile: options.readyFile, command: "mock-expo",
                                    wait: { CommandSupport.waitForTermination(onHangup: {}) }, stop: server.stop)
    }
}

/// Parsed `herald mock-expo` flags (see `spec`).
struct MockExpoOptions {
    var server = ServerFlags()
    var configuration = MockExpoConfiguration()
    var generateTLS: String?
    var accessToken: String?
    var noAccessToken = false
    var readyFile: String?

    /// Every flag, declared once: parsing, `--help` and docs/mock-expo.md's table are made from these.
    static var settings: [Setting<MockExpoOptions>] {
        ServerFlags.listen(at: \.server) + ServerFlags.certificate(at: \.server) + [
            .option("generate-tls", \.generateTLS, "dir", as: CommandSupport.absolute,
                    "Write ca.pem, ca-key.pem, server.pem, server-key.pem and expo-access-token to this directory (default: a temporary directory)."),
            .option("access-token", \.accessToken, "token", "Ask for this access token (default: a generated one, written to expo-access-token)."),
            .option("no-access-token", \.noAccessToken, "Ask for no access token (a project without enhanced push security)."),
            .option("receipt-late-ms", \.configuration.receiptLateMs, "ms", in: 0...86_400_000, "A late- token's receipt appears this long after its ticket (default 2000)."),
            .option("rate-limit", \.configuration.rateLimitPerSecond, "n", in: 0...1_000_000, "Answer 429 to push/send requests past n in one second (default 0: none)."),
            .option("fail-every", \.configuration.failEvery, "n", in: 0...1_000_000, "Answer 503 to every n-th push/send request (default 0: never)."),
            .option("latency-ms", \.configuration.latencyMs, "ms", in: 0...60_000, "Added before every answer (default 0)."),
            .option("goaway-after", \.configuration.goawayAfterRequests, "n", in: 1...1_000_000, "GOAWAY (HTTP/1.1: Connection: close) after n requests on a connection."),
            .option("drop-after", \.configuration.dropAfterRequests, "n", in: 1...1_000_000, "Close a connection abruptly when request n+1 arrives."),
            .option("silence-after", \.configuration.silenceAfterRequests, "n", in: 1...1_000_000, "Stop reading a connection after n requests (a dead peer)."),
            .option("ready-file", \.readyFile, "file", "Write the ready JSON line to this file once listening."),
        ]
    }

    static let spec = CommandSpec(
        usageName: "herald mock-expo",
        abstract: "Run the Expo push service simulator (push/send tickets, getReceipts, access token, fates by token).",
        discussion: """
        An HTTPS server (HTTP/2 and HTTP/1.1) that answers like Expo's push service: POST /--/api/v2/push/send (a
        message or up to 100, a ticket per token) and POST /--/api/v2/push/getReceipts (up to 1,000 ids), gzip bodies
        accepted, the access token checked. A token's fate is the start of the text in its brackets: gone, rate, big
        (ticket errors), rgone, rerr (receipt errors), late, never (receipts), anything else delivered. GET
        /_mock/stats gives the counters. Prints one JSON line when ready: {"access_token_file":...,"base_url":...,
        "ca_file":...,"host":...,"pid":...,"port":...,"receipts_url":...,"send_url":...,"stats_url":...}. Runs until
        SIGTERM/SIGINT (exit 0). See docs/mock-expo.md and docs/expo.md.
        Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write.
        """,
        options: SettingsReader.options(settings))

    init(_ args: ParsedArguments) throws(UsageError) {
        try SettingsReader.apply(Self.settings, arguments: args, to: &self)
        try server.check()
        if noAccessToken && accessToken != nil { throw UsageError("--access-token and --no-access-token exclude each other") }
    }
}
