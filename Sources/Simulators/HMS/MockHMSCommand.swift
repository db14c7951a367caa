import Basics
import Foundation
import Glibc

/// `herald mock-hms ...`: runs the Push Kit simulator until SIGTERM/SIGINT; SIGHUP reloads `--config`.
public enum MockHMSCommand {
    public static let command = Command(MockHMSOptions.spec) { parsed in
        run(try MockHMSOptions(parsed), waitForStop: waitForSignals)
    }

    /// Runs the command. `arguments` are the words after `mock-hms` (a leading "mock-hms" is skipped too).
    public static func main(arguments: [String]) -> Int32 {
        CommandSupport.main(command, name: "mock-hms", arguments: arguments)
    }

    private static func fail(_ text: String, code: Int32) -> Int32 { CommandSupport.fail("mock-hms", text, code: code) }

    /// Starts the server from `options`, prints the ready line, then blocks in `waitForStop` and stops the server.
    static func run(_ options: MockHMSOptions, waitForStop: (MockHMSServer, String?) -> Void) -> Int32 {
        var configuration = MockHMSConfiguration()
        configuration.host = options.host
        configuration.port = options.port
        configuration.apps = options.apps
        configuration.requireAuthentication = !options.noAuth
        configuration.maxConcurrentStreams = options.maxStreams
        configuration.seed = options.seed
        configuration.logFile = options.logFile
        configuration.recordAccepted = options.record
        if let lifetime = options.tokenLifetime { configuration.accessTokenLifetimeSeconds = lifetime }
        if let file = options.configFile {
            do { configuration.faults = try MockHMSFaultScript.load(file: file) } catch { return fail("\(error)", code: 78) }
        }
        var caFile: String?
        let directory: String
        do {
            // The secret file goes beside the generated TLS files (or into a scratch directory with --cert).
            directory = try options.generateTLS ?? CommandSupport.temporaryDirectory(prefix: "herald-mock-hms")
            let (files, generatedCA) = try CommandSupport.tlsFiles(certificate: options.certFile, key: options.keyFile, generateIn: directory, prefix: "herald-mock-hms")
            configuration.tls = files
            caFile = generatedCA
        } catch { return fail("TLS: \(error)", code: 69) }

        let server: MockHMSServer
        do { server = try MockHMSServer(configuration: configuration) } catch { return fail("cannot start: \(error)", code: 69) }
        // The first app's secret in a file of its own (mode 0600): what a client's credentials file holds.
        let secretFile = (directory as NSString).appendingPathComponent("hms-client-secret")
        guard FileManager.default.createFile(atPath: secretFile, contents: Data(server.app.clientSecret.utf8), attributes: [.posixPermissions: 0o600]) else {
            server.stop()
            return fail("cannot write \(secretFile)", code: 73)
        }
        var ready: [String: Any] = ["port": server.port, "pid": Int(getpid()), "host": options.host, "app_id": server.app.appId,
                                    "client_secret_file": secretFile, "token_url": server.tokenURL, "base_url": server.baseURL,
                                    "send_url": server.sendURL()]
        if let caFile { ready["ca_file"] = caFile }
        return CommandSupport.serve(ready, readyFile: options.readyFile, command: "mock-hms",
                                    wait: { waitForStop(server, options.configFile) }, stop: server.stop)
    }

    private static func waitForSignals(_ server: MockHMSServer, _ configFile: String?) {
        CommandSupport.waitForTermination(reloading: configFile) { _ = reload(server, from: $0) }
    }

    /// SIGHUP: load the config file again; a bad file leaves the config in force (and says why).
    static func reload(_ server: MockHMSServer, from configFile: String) -> Bool {
        CommandSupport.reload(command: "mock-hms", configFile: configFile) {
            try server.replaceFaults(try MockHMSFaultScript.load(file: configFile))
        }
    }
}

/// Parsed `herald mock-hms` flags (see `spec`).
struct MockHMSOptions {
    var host = "127.0.0.1"
    var port = 0
    var certFile: String?
    var keyFile: String?
    var generateTLS: String?
    var apps: [MockHMSApp] = []
    var configFile: String?
    var maxStreams: UInt32 = 100
    var tokenLifetime: Int?
    var seed: UInt64 = 1
    var logFile: String?
    var record = false
    var readyFile: String?
    var noAuth = false

    static let spec = CommandSpec(
        usageName: "herald mock-hms",
        abstract: "Run the Huawei Push Kit simulator (v1 messages:send and the OAuth token endpoint, TLS, scripted faults).",
        discussion: """
        An HTTPS server (HTTP/2 and HTTP/1.1) that answers like Push Kit's v1 messages:send and Huawei's OAuth 2.0
        token endpoint (client credentials), on one port. Writes the first app's client secret to a file and prints
        one JSON line when ready: {"app_id":...,"base_url":...,"ca_file":...,"client_secret_file":...,"host":...,
        "pid":...,"port":...,"send_url":...,"token_url":...}. Runs until SIGTERM/SIGINT (exit 0); SIGHUP reloads
        --config. See docs/mock-hms.md.
        Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write, 78 bad config.
        """,
        options: [
            .value("host", "address", "Listen address (default 127.0.0.1)."),
            .value("port", "n", "Port, 0 = a free one (default 0; the ready line says which)."),
            .value("cert", "file", "Server certificate chain (PEM); goes with --key."),
            .value("key", "file", "Server private key (PEM); goes with --cert."),
            .value("generate-tls", "dir", "Write ca.pem, ca-key.pem, server.pem, server-key.pem and hms-client-secret to this directory (default without --cert: a temporary directory)."),
            .value("app", "id:secret", "Accept this app id (digits) with this client secret (default: app 10000001 with a generated secret).", repeatable: true),
            .value("config", "file", "Device state, faults and flow control (JSON; reloaded on SIGHUP)."),
            .value("max-streams", "n", "SETTINGS_MAX_CONCURRENT_STREAMS on HTTP/2 connections (default 100)."),
            .value("token-lifetime", "seconds", "expires_in of issued access tokens (default 3600)."),
            .value("seed", "n", "Seed for rates and latency ranges (default 1; the config's seed wins)."),
            .value("log-file", "file", "Append checked sends as JSON lines."),
            .flag("record", "Keep checked sends in memory for GET /_mock/accepted."),
            .value("ready-file", "file", "Write the ready JSON line to this file once listening."),
            .flag("no-auth", "No bearer check on messages:send (pure load only)."),
        ])

    static func parse(_ words: [String]) throws(UsageError) -> MockHMSOptions {
        try MockHMSOptions(try ParsedArguments.parse(words, spec: spec))
    }

    init() {}

    init(_ args: ParsedArguments) throws(UsageError) {
        if let host = args.value("host") { self.host = host }
        if let port = try args.integer("port", as: Int.self, in: 0...65535) { self.port = port }
        certFile = args.value("cert")
        keyFile = args.value("key")
        generateTLS = args.value("generate-tls").map(CommandSupport.absolute)
        for word in args.all("app") {
            let parts = word.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64, parts[0].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), !parts[1].isEmpty else {
                throw UsageError("--app takes id:secret, the id digits (Huawei's client_id)")
            }
            apps.append(MockHMSApp(appId: parts[0], clientSecret: parts[1]))
        }
        configFile = args.value("config")
        if let streams = try args.integer("max-streams", as: UInt32.self, in: 1...UInt32.max) { maxStreams = streams }
        tokenLifetime = try args.integer("token-lifetime", as: Int.self, in: 1...86_400)
        if let seed = try args.integer("seed", as: UInt64.self) { self.seed = seed }
        logFile = args.value("log-file")
        record = args.flag("record")
        readyFile = args.value("ready-file")
        noAuth = args.flag("no-auth")
        if (certFile == nil) != (keyFile == nil) { throw UsageError("--cert and --key go together") }
    }
}
