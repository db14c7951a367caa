import Basics
import Foundation
import Glibc

/// `herald mock-fcm ...`: runs the FCM simulator until SIGTERM/SIGINT; SIGHUP reloads `--config`.
public enum MockFCMCommand {
    /// `herald mock-fcm`: parsing, `--help` and usage errors as for every herald command.
    public static let command = Command(MockFCMOptions.spec) { parsed in
        run(try MockFCMOptions(parsed), waitForStop: waitForSignals)
    }

    /// Runs the command. `arguments` are the words after `mock-fcm` (a leading "mock-fcm" is skipped too).
    public static func main(arguments: [String]) -> Int32 {
        CommandSupport.main(command, name: "mock-fcm", arguments: arguments)
    }

    private static func fail(_ text: String, code: Int32) -> Int32 { CommandSupport.fail("mock-fcm", text, code: code) }

    /// Starts the server from `options`, prints the ready line, then blocks in `waitForStop` and stops the server.
    static func run(_ options: MockFCMOptions, waitForStop: (MockFCMServer, String?) -> Void) -> Int32 {
        var configuration = MockFCMConfiguration()
        configuration.host = options.host
        configuration.port = options.port
        configuration.projectID = options.project
        configuration.requireAuthentication = !options.noAuth
        configuration.maxConcurrentStreams = options.maxStreams
        configuration.seed = options.seed
        configuration.logFile = options.logFile
        configuration.recordAccepted = options.record
        if let lifetime = options.tokenLifetime { configuration.accessTokenLifetimeSeconds = lifetime }
        if let file = options.configFile {
            do { configuration.faults = try MockFCMFaultScript.load(file: file) } catch { return fail("\(error)", code: 78) }
        }
        if options.deviceQuota { configuration.faults.deviceQuota = true }
        do {
            configuration.serviceAccounts = try options.serviceAccounts.map { try MockServiceAccount.load(file: $0) }
        } catch { return fail("service account: \(error)", code: 78) }

        var caFile: String?
        do {
            let (files, generatedCA) = try CommandSupport.tlsFiles(certificate: options.certFile, key: options.keyFile,
                                                                   generateIn: options.generateTLS, prefix: "herald-mock-fcm")
            configuration.tls = files
            caFile = generatedCA
        } catch { return fail("TLS: \(error)", code: 69) }
        configuration.serviceAccountDirectory = options.serviceAccountDir ?? options.generateTLS

        let server: MockFCMServer
        do { server = try MockFCMServer(configuration: configuration) } catch { return fail("cannot start: \(error)", code: 69) }

        var ready: [String: Any] = ["port": server.port, "pid": Int(getpid()), "host": options.host, "project_id": server.projectID,
                                    "service_account_file": server.serviceAccountFile, "token_uri": server.tokenURI,
                                    "send_url": server.sendURL()]
        if let caFile { ready["ca_file"] = caFile }
        return CommandSupport.serve(ready, readyFile: options.readyFile, command: "mock-fcm",
                                    wait: { waitForStop(server, options.configFile) }, stop: server.stop)
    }

    private static func waitForSignals(_ server: MockFCMServer, _ configFile: String?) {
        CommandSupport.waitForTermination(reloading: configFile) { _ = reload(server, from: $0) }
    }

    /// SIGHUP: load the config file again; a bad file leaves the config in force (and says why).
    static func reload(_ server: MockFCMServer, from configFile: String) -> Bool {
        CommandSupport.reload(command: "mock-fcm", configFile: configFile) {
            try server.replaceFaults(try MockFCMFaultScript.load(file: configFile))
        }
    }
}

/// Parsed `herald mock-fcm` flags (see `spec`).
struct MockFCMOptions {
    var host = "127.0.0.1"
    var port = 0
    var certFile: String?
    var keyFile: String?
    var generateTLS: String?
    var project = "herald-mock"
    var serviceAccounts: [String] = []
    var serviceAccountDir: String?
    var configFile: String?
    var deviceQuota = false
    var maxStreams: UInt32 = 100
    var tokenLifetime: Int?
    var seed: UInt64 = 1
    var logFile: String?
    var record = false
    var readyFile: String?
    var noAuth = false

    static let spec = CommandSpec(
        usageName: "herald mock-fcm",
        abstract: "Run the FCM simulator (HTTP v1 messages:send and the OAuth token endpoint, TLS, scripted faults).",
        discussion: """
        An HTTPS server (HTTP/2 and HTTP/1.1) that answers like FCM HTTP v1 and Google's OAuth2 token endpoint.
        Writes a service-account JSON whose token_uri points at it, and prints one JSON line when ready:
        {"ca_file":...,"host":...,"pid":...,"port":...,"project_id":...,"service_account_file":...,"send_url":...}.
        Runs until SIGTERM/SIGINT (exit 0); SIGHUP reloads --config. See docs/mock-fcm.md.
        Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write, 78 bad config or account.
        """,
        options: [
            .value("host", "address", "Listen address (default 127.0.0.1)."),
            .value("port", "n", "Port, 0 = a free one (default 0; the ready line says which)."),
            .value("cert", "file", "Server certificate chain (PEM); goes with --key."),
            .value("key", "file", "Server private key (PEM); goes with --cert."),
            .value("generate-tls", "dir", "Write ca.pem, ca-key.pem, server.pem, server-key.pem and service-account.json to this directory (default without --cert: a temporary directory)."),
            .value("project", "id", "Project of the generated service account (default herald-mock)."),
            .value("service-account", "file", "Accept this service-account JSON instead of generating one (written out again with token_uri pointing here).", repeatable: true),
            .value("service-account-dir", "dir", "Where to write the service-account JSON files (default: the --generate-tls directory)."),
            .value("config", "file", "Device state, faults and quotas (JSON; reloaded on SIGHUP)."),
            .flag("device-quota", "Enforce FCM's per-device limits (240 a minute, 5000 an hour to one token)."),
            .value("max-streams", "n", "SETTINGS_MAX_CONCURRENT_STREAMS on HTTP/2 connections (default 100)."),
            .value("token-lifetime", "seconds", "expires_in of issued access tokens (default 3600)."),
            .value("seed", "n", "Seed for rates and latency ranges (default 1; the config's seed wins)."),
            .value("log-file", "file", "Append accepted messages as JSON lines."),
            .flag("record", "Keep accepted messages in memory for GET /_mock/accepted."),
            .value("ready-file", "file", "Write the ready JSON line to this file once listening."),
            .flag("no-auth", "No bearer check on messages:send (pure load only)."),
        ])

    static func parse(_ words: [String]) throws(UsageError) -> MockFCMOptions {
        try MockFCMOptions(try ParsedArguments.parse(words, spec: spec))
    }

    init() {}

    init(_ args: ParsedArguments) throws(UsageError) {
        if let host = args.value("host") { self.host = host }
        if let port = try args.integer("port", as: Int.self, in: 0...65535) { self.port = port }
        certFile = args.value("cert")
        keyFile = args.value("key")
        generateTLS = args.value("generate-tls").map(CommandSupport.absolute)
        if let project = args.value("project") { self.project = project }
        serviceAccounts = args.all("service-account")
        serviceAccountDir = args.value("service-account-dir").map(CommandSupport.absolute)
        configFile = args.value("config")
        deviceQuota = args.flag("device-quota")
        if let streams = try args.integer("max-streams", as: UInt32.self, in: 1...UInt32.max) { maxStreams = streams }
        tokenLifetime = try args.integer("token-lifetime", as: Int.self, in: 1...86_400)
        if let seed = try args.integer("seed", as: UInt64.self) { self.seed = seed }
        logFile = args.value("log-file")
        record = args.flag("record")
        readyFile = args.value("ready-file")
        noAuth = args.flag("no-auth")
        if (certFile == nil) != (keyFile == nil) { throw UsageError("--cert and --key go together") }
        if !serviceAccounts.isEmpty && args.value("project") != nil { throw UsageError("--project names the generated account; --service-account files carry their own") }
    }
}
