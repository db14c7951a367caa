import Basics
import Dispatch
import Foundation
import Glibc
import Settings

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
            let file = (directory as NSString).appendingPathComponent(name)
            do {
                keys.append(try MockProviderKey.load(file: file, keyID: keyID, teamID: options.teamID, environment: options.keyEnvironment,
                                                     topics: options.topics))
            } catch {
                // Issue 52: a bad key among several named no file.
                throw SimulatorError.file("\(file): \(error)")
            }
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

    /// Every flag, declared once: parsing, `--help` and docs/mock-apns.md's table are made from these.
    static var settings: [Setting<MockAPNsOptions>] {
        ServerFlags.listen(at: \.server) + [
            .option("management-port", \.managementPort, "n", in: 0...65535,
                    "Answer channel management only on this port, 0 = a free one (the ready line gives management_port), as Apple's separate api-manage-broadcast host; the main port then answers pushes and broadcasts only, and a path of the other API gets 404 BadPath (default: on --port, with pushes)."),
        ] + ServerFlags.certificate(at: \.server) + [
            .option("generate-tls", \.generateTLS, "dir", "Write a throwaway CA and a server certificate for localhost, 127.0.0.1 and ::1 (ca.pem, ca-key.pem, server.pem, server-key.pem) to this directory and use them (default without --cert: a temporary directory)."),
            .option("cleartext", \.cleartext, "Plain HTTP/2 with prior knowledge instead of TLS (not like APNs; for h2load http://... or curl --http2-prior-knowledge)."),
            .option("client-ca", \.clientCA, "file", "Accept client certificates signed by this CA (certificate-based auth)."),
            .commaList("cert-topics", \.certificateTopics, "a,b", "Topics for certificate connections (default: the certificate's UID, else CN)."),
            .option("keys-dir", \.keysDir, "dir", "Provider keys: AuthKey_<KEYID>.p8 (private, as Apple issues them) or <KEYID>.pem (public or private); all get --team-id, --environment and --topics."),
            .option("generate-key", \.generateKey, "dir", "Generate a P-256 key and write AuthKey_<KEYID>.p8 (PKCS#8 PEM) here (default when no --keys-dir: the --generate-tls directory, else a temporary one)."),
            .option("key-id", \.keyID, "id", "Key ID of the generated key (default ABC123DEFG)."),
            .option("team-id", \.teamID, "id", "Team ID of the keys (default DEF123GHIJ)."),
            .commaList("topics", \.topics, "a,b", "Bundle IDs the keys may push to, push-type suffixes included (default: any)."),
            .option("environment", \.keyEnvironment, "env", MockEnvironment.allCases, "Environment of the keys: production, sandbox or both (default both)."),
            .option("sandbox", \.sandbox, "Behave as the sandbox host (adds apns-unique-id; production-only keys get BadEnvironmentKeyIdInToken)."),
            .option("config", \.configFile, "file", "Device state and faults (JSON, format in docs/mock-apns.md; reloaded on SIGHUP)."),
            .option("max-streams", \.maxStreams, "n", in: 1...UInt32.max, "SETTINGS_MAX_CONCURRENT_STREAMS after a connection's first valid token (default 1000)."),
            .option("drop-streams-after-rejection", \.dropStreamsAfterRejection, "Advertise 1 stream after a rejected push, back to --max-streams after the next accepted one (as APNs was seen doing)."),
            .option("token-update-window", \.tokenUpdateWindow, "seconds", minimum: 0, "Minimum seconds between token changes on a connection (default 1200; lower it in tests)."),
            .option("token-lifetime", \.tokenLifetime, "seconds", "Age of iat that makes a token expired (default 3600)."),
            .option("allow-missing-push-type", \.allowMissingPushType, "Treat a missing apns-push-type as alert instead of 400 MissingPushType."),
            .option("seed", \.seed, "n", "Seed for rates and latency ranges (default 1; the config's seed wins)."),
            .option("log-file", \.logFile, "file", "Append accepted notifications as JSON lines."),
            .option("log-payloads", \.logPayloads, "Include the payload text in the accepted log."),
            .option("record", \.record, "Keep accepted notifications in memory for GET /_mock/accepted (broadcasts: GET /_mock/broadcasts)."),
            .option("record-requests", \.recordRequests, "Keep every APNs request as received (headers in order, body) for GET /_mock/requests."),
            .option("max-channels", \.maxChannels, "n", in: 0...1_000_000, "Broadcast channels one app may hold (default 10000, Apple's limit per environment; one more is 400 CannotCreateChannelConfig)."),
            .commaList("broadcast-bundles", \.broadcastBundleIDs, "a,b", "Bundle IDs with the broadcast capability (default: all; others get 400 FeatureNotEnabled)."),
            .option("ready-file", \.readyFile, "file", "Write the ready JSON line to this file once listening (scripts wait for it)."),
            .option("print-token", \.printToken, "Add a provider token signed with the (first) key to the ready line."),
            .option("no-auth", \.noAuth, "No authorization checks at all and every stream from the start (pure HTTP/2 load only)."),
        ]
    }

    static let spec = CommandSpec(
        usageName: "herald mock-apns",
        abstract: "Run the APNs simulator (HTTP/2, TLS, token auth, scripted faults).",
        discussion: """
        An HTTP/2 server that answers like APNs (token and certificate auth, Apple's header rules, scripted faults).
        Prints one JSON line when ready: {"port":...,"ca_file":...,"key_file":...,"key_id":...,"team_id":...}.
        Runs until SIGTERM/SIGINT (exit 0); SIGHUP reloads --config. See docs/mock-apns.md.
        Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write, 78 bad config or keys.
        """,
        options: SettingsReader.options(settings))

    /// `words` as the command line gives them (after `mock-apns`).
    static func parse(_ words: [String]) throws(UsageError) -> MockAPNsOptions {
        try MockAPNsOptions(try ParsedArguments.parse(words, spec: spec))
    }

    init() {}

    init(_ args: ParsedArguments) throws(UsageError) {
        try SettingsReader.apply(Self.settings, arguments: args, to: &self)
        try server.check()
        if keysDir != nil && generateKey != nil { throw UsageError("--keys-dir and --generate-key exclude each other") }
        if cleartext && clientCA != nil { throw UsageError("--client-ca needs TLS") }
    }
}
