import Basics
import Dispatch
import Foundation
import Glibc

/// `herald mock-apns ...`: runs the simulator until SIGTERM/SIGINT; SIGHUP reloads `--config`.
public enum MockAPNsCommand {
    /// `herald mock-apns`: parsing, `--help` and usage errors as for every herald command.
    public static let command = Command(MockAPNsOptions.spec) { parsed in
        run(try MockAPNsOptions(parsed), waitForStop: waitForSignals)
    }

    /// Runs the command. `arguments` are the words after `mock-apns` (a leading "mock-apns" is skipped too).
    /// Returns 0 after a clean stop, 64 on usage errors, 78 on a bad config file, 69 when it cannot start.
    public static func main(arguments: [String]) -> Int32 {
        CommandSupport.main(command, name: "mock-apns", arguments: arguments)
    }

    private static func fail(_ text: String, code: Int32) -> Int32 { CommandSupport.fail("mock-apns", text, code: code) }

    /// Starts the server from `options`, prints the ready line, then blocks in `waitForStop` and stops the server.
    /// Tests pass their own `waitForStop`; the command waits for signals.
    static func run(_ options: MockAPNsOptions, waitForStop: (MockAPNsServer, String?) -> Void) -> Int32 {
        var configuration = MockAPNsConfiguration()
        configuration.host = options.server.host
        configuration.port = options.server.port
        configuration.managementPort = options.managementPort
        configuration.cleartext = options.cleartext
        configuration.clientCAFile = options.clientCA
        configuration.certificateTopics = options.certificateTopics
        configuration.environment = options.sandbox ? .sandbox : .production
        configuration.requireAuthentication = !options.noAuth
        configuration.maxConcurrentStreams = options.maxStreams
        configuration.seed = options.seed
        configuration.logFile = options.logFile
        configuration.logPayloads = options.logPayloads
        configuration.recordAccepted = options.record
        configuration.recordRequests = options.recordRequests
        configuration.maxChannels = options.maxChannels
        configuration.broadcastBundleIDs = options.broadcastBundleIDs
        if let window = options.tokenUpdateWindow { configuration.tokenUpdateWindowSeconds = window }
        if let lifetime = options.tokenLifetime { configuration.tokenLifetimeSeconds = lifetime }
        configuration.requirePushType = !options.allowMissingPushType

        if let file = options.configFile {
            do { configuration.faults = try MockFaultScript.load(file: file) } catch { return fail("\(error)", code: 78) }
        }
        if options.dropStreamsAfterRejection { configuration.faults.dropStreamsAfterRejection = true }

        var caFile: String?
        if !options.cleartext {
            do {
                let (files, generatedCA) = try CommandSupport.tlsFiles(certificate: options.server.certFile, key: options.server.keyFile,
                                                                       generateIn: options.generateTLS, prefix: "herald-mock-apns")
                configuration.tls = files
                caFile = generatedCA
            } catch { return fail("TLS: \(error)", code: 69) }
        }

        var keyFile: String?
        var firstKey: MockProviderKey?
        if !options.noAuth {
            do {
                if let directory = options.keysDir {
                    configuration.keys = try loadKeys(directory: directory, options: options)
                    if configuration.keys.isEmpty { return fail("no AuthKey_<KEYID>.p8 or <KEYID>.pem files in \(directory)", code: 78) }
                } else {
                    let directory = try options.generateKey ?? options.generateTLS ?? temporaryDirectory()
                    let key = try MockProviderKey.generate(keyID: options.keyID, teamID: options.teamID, environment: options.keyEnvironment,
                                                           topics: options.topics, directory: directory)
                    configuration.keys = [key]
                }
                firstKey = configuration.keys.first
                keyFile = firstKey?.privateKeyFile
            } catch { return fail("keys: \(error)", code: 78) }
        }

        let server: MockAPNsServer
        do { server = try MockAPNsServer(configuration: configuration) } catch { return fail("cannot start: \(error)", code: 69) }

        var ready: [String: Any] = ["port": server.port, "pid": Int(getpid()), "host": options.server.host,
                                    "environment": configuration.environment.rawValue, "tls": !options.cleartext]
        if let caFile { ready["ca_file"] = caFile }
        if let management = server.managementPort { ready["management_port"] = management }
        if let keyFile { ready["key_file"] = keyFile }
        if let firstKey {
            ready["key_id"] = firstKey.keyID
            ready["team_id"] = firstKey.teamID
            if options.printToken, let token = try? firstKey.makeToken() { ready["token"] = token }
        }
        return CommandSupport.serve(ready, readyFile: options.readyFile, command: "mock-apns",
                                    wait: { waitForStop(server, options.configFile) }, stop: server.stop)
    }

    /// Blocks until SIGTERM or SIGINT; reloads `configFile` on SIGHUP (keeping the old config if the new one is bad).
    private static func waitForSignals(_ server: MockAPNsServer, _ configFile: String?) {
        CommandSupport.waitForTermination(reloading: configFile) { _ = reload(server, from: $0) }
    }

    /// SIGHUP: load the config file again; a bad file leaves the config in force (and says why).
    static func reload(_ server: MockAPNsServer, from configFile: String) -> Bool {
        CommandSupport.reload(command: "mock-apns", configFile: configFile) {
            try server.replaceFaults(try MockFaultScript.load(file: configFile))
        }
    }

    private static func temporaryDirectory() throws -> String {
        try CommandSupport.temporaryDirectory(prefix: "herald-mock-apns")
    }

    /// Keys in a directory: `AuthKey_<KEYID>.p8` (private, as Apple issues them) or `<KEYID>.pem` (public or private).
    private static func loadKeys(directory: String, options: MockAPNsOptions) throws -> [MockProviderKey] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var keys: [MockProviderKey] = []
        for name in names.sorted() {
            var keyID: String?
            if name.hasPrefix("AuthKey_") && name.hasSuffix(".p8") {
                keyID = String(name.dropFirst(8).dropLast(3))
            } else if name.hasSuffix(".pem") {
                keyID = String(name.dropLast(4))
            }
            guard let keyID, !keyID.isEmpty else { continue }
            keys.append(try MockProviderKey.load(file: (directory as NSString).appendingPathComponent(name), keyID: keyID,
                                                 teamID: options.teamID, environment: options.keyEnvironment, topics: options.topics))
        }
        return keys
    }
}

/// Parsed `herald mock-apns` flags (see `spec`).
struct MockAPNsOptions {
    var server = ServerFlags()
    var managementPort: Int?
    var generateTLS: String?
    var cleartext = false
    var clientCA: String?
    var certificateTopics: [String]?
    var keysDir: String?
    var generateKey: String?
    var keyID = "ABC123DEFG"
    var teamID = "DEF123GHIJ"
    var topics: [String] = []
    var keyEnvironment: MockEnvironment = .both
    var sandbox = false
    var configFile: String?
    var maxStreams: UInt32 = 1000
    var dropStreamsAfterRejection = false
    var seed: UInt64 = 1
    var recordRequests = false
    var maxChannels = 10_000
    var broadcastBundleIDs: [String]?
    var logFile: String?
    var logPayloads = false
    var record = false
    var readyFile: String?
    var printToken = false
    var noAuth = false
    var tokenUpdateWindow: Double?
    var tokenLifetime: Int64?
    var allowMissingPushType = false

    static let spec = CommandSpec(
        usageName: "herald mock-apns",
        abstract: "Run the APNs simulator (HTTP/2, TLS, token auth, scripted faults).",
        discussion: """
        An HTTP/2 server that answers like APNs (token and certificate auth, Apple's header rules, scripted faults).
        Prints one JSON line when ready: {"port":...,"ca_file":...,"key_file":...,"key_id":...,"team_id":...}.
        Runs until SIGTERM/SIGINT (exit 0); SIGHUP reloads --config. See docs/mock-apns.md.
        Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write, 78 bad config or keys.
        """,
        options: ServerFlags.listenOptions + [
            .value("management-port", "n", "Answer channel management only on this port, 0 = a free one (default: on --port, with pushes)."),
        ] + ServerFlags.certificateOptions + [
            .value("generate-tls", "dir", "Write ca.pem, ca-key.pem, server.pem, server-key.pem to this directory and use them (default without --cert: a temporary directory)."),
            .flag("cleartext", "Plain HTTP/2 with prior knowledge instead of TLS (not like APNs; for h2load)."),
            .value("client-ca", "file", "Accept client certificates signed by this CA (certificate-based auth)."),
            .value("cert-topics", "a,b", "Topics for certificate connections (default: the certificate's UID, else CN)."),
            .value("keys-dir", "dir", "Provider keys: AuthKey_<KEYID>.p8 or <KEYID>.pem (public or private), team --team-id."),
            .value("generate-key", "dir", "Generate a P-256 key and write AuthKey_<KEYID>.p8 here (default when no --keys-dir: the --generate-tls directory, else a temporary one)."),
            .value("key-id", "id", "Key ID of the generated key (default ABC123DEFG)."),
            .value("team-id", "id", "Team ID of the keys (default DEF123GHIJ)."),
            .value("topics", "a,b", "Bundle IDs the keys may push to (default: any)."),
            .value("environment", "env", "Environment of the keys: production, sandbox or both (default both)."),
            .flag("sandbox", "Behave as the sandbox host (adds apns-unique-id; production-only keys get BadEnvironmentKeyIdInToken)."),
            .value("config", "file", "Device state and faults (JSON; reloaded on SIGHUP)."),
            .value("max-streams", "n", "SETTINGS_MAX_CONCURRENT_STREAMS after the first valid token (default 1000)."),
            .flag("drop-streams-after-rejection", "Advertise 1 stream after a rejected push, back after the next accepted one."),
            .value("token-update-window", "seconds", "Minimum seconds between token changes on a connection (default 1200)."),
            .value("token-lifetime", "seconds", "Age of iat that makes a token expired (default 3600)."),
            .flag("allow-missing-push-type", "Treat a missing apns-push-type as alert instead of 400 MissingPushType."),
            .value("seed", "n", "Seed for rates and latency ranges (default 1; the config's seed wins)."),
            .value("log-file", "file", "Append accepted notifications as JSON lines."),
            .flag("log-payloads", "Include the payload text in the accepted log."),
            .flag("record", "Keep accepted notifications in memory for GET /_mock/accepted (broadcasts: GET /_mock/broadcasts)."),
            .flag("record-requests", "Keep every APNs request (headers in order, body) for GET /_mock/requests."),
            .value("max-channels", "n", "Broadcast channels one app may hold (default 10000; more is CannotCreateChannelConfig)."),
            .value("broadcast-bundles", "a,b", "Bundle IDs with the broadcast capability (default: all; others get FeatureNotEnabled)."),
            .value("ready-file", "file", "Write the ready JSON line to this file once listening."),
            .flag("print-token", "Add a provider token signed with the (first) key to the ready line."),
            .flag("no-auth", "No authorization checks at all (pure HTTP/2 load only)."),
        ])

    /// `words` as the command line gives them (after `mock-apns`).
    static func parse(_ words: [String]) throws(UsageError) -> MockAPNsOptions {
        try MockAPNsOptions(try ParsedArguments.parse(words, spec: spec))
    }

    init() {}

    init(_ args: ParsedArguments) throws(UsageError) {
        server = try ServerFlags(args)
        managementPort = try args.integer("management-port", as: Int.self, in: 0...65535)
        generateTLS = args.value("generate-tls")
        cleartext = args.flag("cleartext")
        clientCA = args.value("client-ca")
        certificateTopics = args.list("cert-topics")
        keysDir = args.value("keys-dir")
        generateKey = args.value("generate-key")
        if let keyID = args.value("key-id") { self.keyID = keyID }
        if let teamID = args.value("team-id") { self.teamID = teamID }
        if let topics = args.list("topics") { self.topics = topics }
        if let environment = try args.choice("environment", MockEnvironment.allCases) { keyEnvironment = environment }
        sandbox = args.flag("sandbox")
        configFile = args.value("config")
        if let streams = try args.integer("max-streams", as: UInt32.self, in: 1...UInt32.max) { maxStreams = streams }
        dropStreamsAfterRejection = args.flag("drop-streams-after-rejection")
        tokenUpdateWindow = try args.double("token-update-window", minimum: 0)
        tokenLifetime = try args.integer("token-lifetime", as: Int64.self)
        allowMissingPushType = args.flag("allow-missing-push-type")
        if let seed = try args.integer("seed", as: UInt64.self) { self.seed = seed }
        logFile = args.value("log-file")
        logPayloads = args.flag("log-payloads")
        record = args.flag("record")
        recordRequests = args.flag("record-requests")
        if let n = try args.integer("max-channels", as: Int.self, in: 0...1_000_000) { maxChannels = n }
        broadcastBundleIDs = args.list("broadcast-bundles")
        readyFile = args.value("ready-file")
        printToken = args.flag("print-token")
        noAuth = args.flag("no-auth")
        if keysDir != nil && generateKey != nil { throw UsageError("--keys-dir and --generate-key exclude each other") }
        if cleartext && clientCA != nil { throw UsageError("--client-ca needs TLS") }
    }
}
