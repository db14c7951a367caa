import Basics
import Foundation
import Glibc
import Settings

/// What the command of a send-API simulator (`mock-fcm`, `mock-hms`) needs of its provider's server: its words
/// and own flags, its settings from them, and its fields of the ready line. The rest is `SendAPICommand`'s.
protocol SendAPIServing: AnyObject, Sendable {
    associatedtype Settings: SendAPISettings where Settings.Faults: SendAPIFaults
    /// The provider's own flags, parsed.
    associatedtype Flags: CommandFlags
    /// `mock-fcm`, `mock-hms`.
    static var name: String { get }
    static var abstract: String { get }
    static var discussion: String { get }
    /// The provider's file `--generate-tls` writes besides the TLS files.
    static var generatedFile: String { get }
    /// What `--config` holds, and what `--log-file` and `--record` keep.
    static var configHolds: String { get }
    static var kept: String { get }
    /// Its own flags, declared: after `--generate-tls`, and after `--config`.
    static var settings: [Setting<Flags>] { get }
    static var settingsAfterConfig: [Setting<Flags>] { get }
    /// Throws what its flags may not say together (`args`: what was given).
    static func check(_ flags: Flags, given args: ParsedArguments) throws(UsageError)
    /// Its settings from its flags.
    static func configure(_ configuration: inout SendAPIConfiguration<Settings>, from options: SendAPIOptions<Self>) throws(CommandFailure)
    /// The directory for the generated TLS files and its own (nil: the TLS files are given, and it needs none).
    static func filesDirectory(_ options: SendAPIOptions<Self>) throws -> String?

    init(configuration: SendAPIConfiguration<Settings>) throws
    var port: Int { get }
    func stop()
    func replaceFaults(_ script: FaultScript<Settings.Faults>) throws
    /// Its fields of the ready line, once its files are written (in `directory`).
    func readyFields(directory: String?) throws(CommandFailure) -> [String: Any]
}

/// A provider's own flags before the command line sets them.
protocol CommandFlags { init() }

/// Why a simulator command stops before serving: what it says, and its exit code.
struct CommandFailure: Error {
    let text: String
    let code: Int32
}

/// Parsed flags of a send-API simulator's command: the shared ones, and the provider's in `provider`.
struct SendAPIOptions<Server: SendAPIServing> {
    var server = ServerFlags()
    var generateTLS: String?
    var configFile: String?
    var maxStreams: UInt32 = 100
    var tokenLifetime: Int?
    var seed: UInt64 = 1
    var logFile: String?
    var record = false
    var readyFile: String?
    var noAuth = false
    var provider = Server.Flags()

    /// Every flag, declared once: parsing, `--help` and the docs' table are made from these.
    static var settings: [Setting<Self>] {
        ServerFlags.listen(at: \.server) + ServerFlags.certificate(at: \.server) + [
            .option("generate-tls", \.generateTLS, "dir", as: CommandSupport.absolute, "Write ca.pem, ca-key.pem, server.pem, server-key.pem and \(Server.generatedFile) to this directory (default without --cert: a temporary directory)."),
        ] + Server.settings.map { $0.lifted(\.provider, prefix: "") } + [
            .option("config", \.configFile, "file", "\(Server.configHolds) (JSON, format in docs/\(Server.name).md; reloaded on SIGHUP, a bad file keeps the old one)."),
        ] + Server.settingsAfterConfig.map { $0.lifted(\.provider, prefix: "") } + [
            .option("max-streams", \.maxStreams, "n", in: 1...UInt32.max, "SETTINGS_MAX_CONCURRENT_STREAMS on HTTP/2 connections (default 100)."),
            .option("token-lifetime", \.tokenLifetime, "seconds", in: 1...86_400, "expires_in of issued access tokens (default 3600); an older token is refused."),
            .option("seed", \.seed, "n", "Seed for rates and latency ranges (default 1; the config's seed wins)."),
            .option("log-file", \.logFile, "file", "Append \(Server.kept) as JSON lines."),
            .option("record", \.record, "Keep \(Server.kept) in memory for GET /_mock/accepted."),
            .option("ready-file", \.readyFile, "file", "Write the ready JSON line to this file once listening."),
            .option("no-auth", \.noAuth, "No bearer check on messages:send (pure load only)."),
        ]
    }

    static var spec: CommandSpec {
        CommandSpec(usageName: "herald \(Server.name)", abstract: Server.abstract, discussion: Server.discussion, options: SettingsReader.options(settings))
    }

    static func parse(_ words: [String]) throws(UsageError) -> Self {
        try Self(try ParsedArguments.parse(words, spec: spec))
    }

    init(_ args: ParsedArguments) throws(UsageError) {
        try SettingsReader.apply(Self.settings, arguments: args, to: &self)
        try server.check()
        try Server.check(provider, given: args)
    }
}

/// `herald mock-fcm ...`, `herald mock-hms ...`: runs the simulator until SIGTERM/SIGINT; SIGHUP reloads `--config`.
enum SendAPICommand<Server: SendAPIServing> {
    /// Parsing, `--help` and usage errors as for every herald command.
    static var command: Command {
        Command(SendAPIOptions<Server>.spec) { parsed in run(try SendAPIOptions(parsed), waitForStop: waitForSignals) }
    }

    /// Runs the command. `arguments` are the words after its name (a leading name is skipped too).
    static func main(_ arguments: [String]) -> Int32 { CommandSupport.main(command, name: Server.name, arguments: arguments) }

    private static func fail(_ text: String, code: Int32) -> Int32 { CommandSupport.fail(Server.name, text, code: code) }

    /// Starts the server from `options`, prints the ready line, then blocks in `waitForStop` and stops the server.
    static func run(_ options: SendAPIOptions<Server>, waitForStop: (Server, String?) -> Void) -> Int32 {
        var configuration = SendAPIConfiguration<Server.Settings>()
        configuration.host = options.server.host
        configuration.port = options.server.port
        configuration.requireAuthentication = !options.noAuth
        configuration.maxConcurrentStreams = options.maxStreams
        configuration.seed = options.seed
        configuration.logFile = options.logFile
        configuration.recordAccepted = options.record
        if let lifetime = options.tokenLifetime { configuration.accessTokenLifetimeSeconds = lifetime }
        if let file = options.configFile {
            do { configuration.faults = try .load(file: file) } catch { return fail("\(error)", code: 78) }
        }
        do { try Server.configure(&configuration, from: options) } catch { return fail(error.text, code: error.code) }
        var caFile: String?
        let directory: String?
        do {
            directory = try Server.filesDirectory(options)
            let (files, generatedCA) = try CommandSupport.tlsFiles(certificate: options.server.certFile, key: options.server.keyFile, generateIn: directory,
                                                                   prefix: "herald-\(Server.name)")
            configuration.tls = files
            caFile = generatedCA
        } catch { return fail("TLS: \(error)", code: 69) }

        let server: Server
        do { server = try Server(configuration: configuration) } catch { return fail("cannot start: \(error)", code: 69) }
        var ready: [String: Any]
        do { ready = try server.readyFields(directory: directory) } catch {
            server.stop()
            return fail(error.text, code: error.code)
        }
        ready["port"] = server.port
        ready["pid"] = Int(getpid())
        ready["host"] = options.server.host
        if let caFile { ready["ca_file"] = caFile }
        return CommandSupport.serve(ready, readyFile: options.readyFile, command: Server.name,
                                    wait: { waitForStop(server, options.configFile) }, stop: server.stop)
    }

    private static func waitForSignals(_ server: Server, _ configFile: String?) {
        CommandSupport.waitForTermination(reloading: configFile) { _ = reload(server, from: $0) }
    }

    /// SIGHUP: load the config file again; a bad file leaves the config in force (and says why).
    static func reload(_ server: Server, from configFile: String) -> Bool {
        CommandSupport.reload(command: Server.name, configFile: configFile) {
            try server.replaceFaults(try .load(file: configFile))
        }
    }
}
