import Dispatch
import Foundation
import Glibc

/// `herald mock-apns ...`: runs the simulator until SIGTERM/SIGINT; SIGHUP reloads `--config`.
public enum MockAPNsCommand {
    /// Runs the command. `arguments` are the words after `mock-apns` (a leading "mock-apns" is skipped too).
    /// Returns 0 after a clean stop, 64 on usage errors, 78 on a bad config file, 69 when it cannot start.
    public static func main(arguments: [String]) -> Int32 {
        var words = arguments
        if words.first == "mock-apns" { words.removeFirst() }
        let options: CommandOptions
        do {
            options = try CommandOptions.parse(words)
        } catch let error as UsageError {
            if error.message == "help" {
                print(CommandOptions.help)
                return 0
            }
            FileHandle.standardError.write(Data("herald mock-apns: \(error.message)\nTry 'herald mock-apns --help'.\n".utf8))
            return 64
        } catch {
            FileHandle.standardError.write(Data("herald mock-apns: \(error)\n".utf8))
            return 64
        }
        return run(options, waitForStop: waitForSignals)
    }

    private static func fail(_ text: String, code: Int32) -> Int32 {
        FileHandle.standardError.write(Data("herald mock-apns: \(text)\n".utf8))
        return code
    }

    /// Starts the server from `options`, prints the ready line, then blocks in `waitForStop` and stops the server.
    /// Tests pass their own `waitForStop`; the command waits for signals.
    static func run(_ options: CommandOptions, waitForStop: (MockAPNsServer, String?) -> Void) -> Int32 {
        var configuration = MockAPNsConfiguration()
        configuration.host = options.host
        configuration.port = options.port
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
                if let cert = options.certFile, let key = options.keyFile {
                    configuration.tls = MockTLSFiles(certificateFile: cert, privateKeyFile: key)
                } else {
                    let directory = try options.generateTLS ?? temporaryDirectory()
                    let files = try MockTLSFiles.generate(in: directory)
                    configuration.tls = files
                    caFile = files.caFile
                }
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

        var ready: [String: Any] = ["port": server.port, "pid": Int(getpid()), "host": options.host,
                                    "environment": configuration.environment.rawValue, "tls": !options.cleartext]
        if let caFile { ready["ca_file"] = caFile }
        if let keyFile { ready["key_file"] = keyFile }
        if let firstKey {
            ready["key_id"] = firstKey.keyID
            ready["team_id"] = firstKey.teamID
            if options.printToken, let token = try? firstKey.makeToken() { ready["token"] = token }
        }
        let line = (try? JSONSerialization.data(withJSONObject: ready, options: [.sortedKeys, .withoutEscapingSlashes])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
        if let readyFile = options.readyFile {
            do { try Data((line + "\n").utf8).write(to: URL(fileURLWithPath: readyFile), options: .atomic) } catch {
                server.stop()
                return fail("cannot write ready file \(readyFile): \(error)", code: 73)
            }
        }

        waitForStop(server, options.configFile)
        server.stop()
        return 0
    }

    /// Blocks until SIGTERM or SIGINT; reloads `configFile` on SIGHUP (keeping the old config if the new one is bad).
    private static func waitForSignals(_ server: MockAPNsServer, _ configFile: String?) {
        let done = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "mock-apns-signals")
        var sources: [DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { done.signal() }
            source.resume()
            sources.append(source)
        }
        signal(SIGHUP, SIG_IGN)
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        hangup.setEventHandler {
            if let configFile { _ = reload(server, from: configFile) }
        }
        hangup.resume()
        sources.append(hangup)
        done.wait()
        for source in sources { source.cancel() }
    }

    /// SIGHUP: load the config file again; a bad file leaves the config in force (and says why).
    static func reload(_ server: MockAPNsServer, from configFile: String) -> Bool {
        do {
            try server.replaceFaults(try MockFaultScript.load(file: configFile))
            FileHandle.standardError.write(Data("herald mock-apns: reloaded \(configFile)\n".utf8))
            return true
        } catch {
            FileHandle.standardError.write(Data("herald mock-apns: reload failed, keeping the old config: \(error)\n".utf8))
            return false
        }
    }

    private static func temporaryDirectory() throws -> String {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("herald-mock-apns.XXXXXX").utf8CString)
        guard let pointer = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw MockAPNsError.file("mkdtemp failed")
        }
        return String(cString: pointer)
    }

    /// Keys in a directory: `AuthKey_<KEYID>.p8` (private, as Apple issues them) or `<KEYID>.pem` (public or private).
    private static func loadKeys(directory: String, options: CommandOptions) throws -> [MockProviderKey] {
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

struct UsageError: Error {
    let message: String
}

/// Parsed `herald mock-apns` flags (see `help`).
struct CommandOptions {
    var host = "127.0.0.1"
    var port = 0
    var certFile: String?
    var keyFile: String?
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
    var logFile: String?
    var logPayloads = false
    var record = false
    var readyFile: String?
    var printToken = false
    var noAuth = false
    var tokenUpdateWindow: Double?
    var tokenLifetime: Int64?
    var allowMissingPushType = false

    static let help = """
    usage: herald mock-apns [options]
    An HTTP/2 server that answers like APNs (token and certificate auth, Apple's header rules, scripted faults).
    Prints one JSON line when ready: {"port":...,"ca_file":...,"key_file":...,"key_id":...,"team_id":...}.
    Runs until SIGTERM/SIGINT (exit 0); SIGHUP reloads --config. See docs/mock-apns.md.

      --host ADDR                 listen address (default 127.0.0.1)
      --port N                    port, 0 = a free one (default 0; the ready line says which)
      --cert FILE --key FILE      server certificate chain and key (PEM)
      --generate-tls DIR          write ca.pem, ca-key.pem, server.pem, server-key.pem to DIR and use them
                                  (default without --cert: a temporary directory)
      --cleartext                 plain HTTP/2 with prior knowledge instead of TLS (not like APNs; for h2load)
      --client-ca FILE            accept client certificates signed by this CA (certificate-based auth)
      --cert-topics A,B           topics for certificate connections (default: the certificate's UID, else CN)
      --keys-dir DIR              provider keys: AuthKey_<KEYID>.p8 or <KEYID>.pem (public or private), team --team-id
      --generate-key DIR          generate a P-256 key and write DIR/AuthKey_<KEYID>.p8 (default when no --keys-dir:
                                  the --generate-tls directory, else a temporary one)
      --key-id ID                 Key ID of the generated key (default ABC123DEFG)
      --team-id ID                Team ID of the keys (default DEF123GHIJ)
      --topics A,B                bundle IDs the keys may push to (default: any)
      --environment ENV           environment of the keys: production, sandbox or both (default both)
      --sandbox                   behave as the sandbox host (adds apns-unique-id; production-only keys get
                                  BadEnvironmentKeyIdInToken)
      --config FILE               device state and faults (JSON; reloaded on SIGHUP)
      --max-streams N             SETTINGS_MAX_CONCURRENT_STREAMS after the first valid token (default 1000)
      --drop-streams-after-rejection
                                  advertise 1 stream after a rejected push, back after the next accepted one
      --token-update-window S     minimum seconds between token changes on a connection (default 1200)
      --token-lifetime S          age of iat that makes a token expired (default 3600)
      --allow-missing-push-type   treat a missing apns-push-type as alert instead of 400 MissingPushType
      --seed N                    seed for rates and latency ranges (default 1; the config's seed wins)
      --log-file FILE             append accepted notifications as JSON lines
      --log-payloads              include the payload text in the accepted log
      --record                    keep accepted notifications in memory for GET /_mock/accepted
      --ready-file FILE           write the ready JSON line to FILE once listening
      --print-token               add a provider token signed with the (first) key to the ready line
      --no-auth                   no authorization checks at all (pure HTTP/2 load only)
      --help                      this text
    Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write, 78 bad config or keys.
    """

    static func parse(_ words: [String]) throws -> CommandOptions {
        var options = CommandOptions()
        var index = 0
        func value(_ flag: String) throws -> String {
            index += 1
            guard index < words.count else { throw UsageError(message: "\(flag) needs a value") }
            return words[index]
        }
        func number<T: FixedWidthInteger>(_ flag: String, _ type: T.Type) throws -> T {
            let text = try value(flag)
            guard let parsed = T(text) else { throw UsageError(message: "\(flag): not a number: \(text)") }
            return parsed
        }
        func list(_ flag: String) throws -> [String] {
            try value(flag).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        while index < words.count {
            var word = words[index]
            if let equals = word.firstIndex(of: "="), word.hasPrefix("--") {
                // --flag=value is accepted as well as --flag value.
                var rewritten = words
                rewritten[index] = String(word[..<equals])
                rewritten.insert(String(word[word.index(after: equals)...]), at: index + 1)
                return try parse(rewritten)
            }
            if word == "-h" { word = "--help" }
            switch word {
            case "--help": throw UsageError(message: "help")
            case "--host": options.host = try value(word)
            case "--port":
                let port = try number(word, Int.self)
                guard (0...65535).contains(port) else { throw UsageError(message: "--port must be 0...65535") }
                options.port = port
            case "--cert": options.certFile = try value(word)
            case "--key": options.keyFile = try value(word)
            case "--generate-tls": options.generateTLS = try value(word)
            case "--cleartext": options.cleartext = true
            case "--client-ca": options.clientCA = try value(word)
            case "--cert-topics": options.certificateTopics = try list(word)
            case "--keys-dir": options.keysDir = try value(word)
            case "--generate-key": options.generateKey = try value(word)
            case "--key-id": options.keyID = try value(word)
            case "--team-id": options.teamID = try value(word)
            case "--topics": options.topics = try list(word)
            case "--environment":
                let text = try value(word)
                guard let environment = MockEnvironment(rawValue: text) else { throw UsageError(message: "--environment must be production, sandbox or both") }
                options.keyEnvironment = environment
            case "--sandbox": options.sandbox = true
            case "--config": options.configFile = try value(word)
            case "--max-streams":
                let streams = try number(word, UInt32.self)
                guard streams >= 1 else { throw UsageError(message: "--max-streams must be at least 1") }
                options.maxStreams = streams
            case "--drop-streams-after-rejection": options.dropStreamsAfterRejection = true
            case "--token-update-window":
                guard let seconds = Double(try value(word)), seconds >= 0 else { throw UsageError(message: "--token-update-window: seconds >= 0") }
                options.tokenUpdateWindow = seconds
            case "--token-lifetime": options.tokenLifetime = try number(word, Int64.self)
            case "--allow-missing-push-type": options.allowMissingPushType = true
            case "--seed": options.seed = try number(word, UInt64.self)
            case "--log-file": options.logFile = try value(word)
            case "--log-payloads": options.logPayloads = true
            case "--record": options.record = true
            case "--ready-file": options.readyFile = try value(word)
            case "--print-token": options.printToken = true
            case "--no-auth": options.noAuth = true
            default: throw UsageError(message: "unknown option \(word)")
            }
            index += 1
        }
        if (options.certFile == nil) != (options.keyFile == nil) { throw UsageError(message: "--cert and --key go together") }
        if options.keysDir != nil && options.generateKey != nil { throw UsageError(message: "--keys-dir and --generate-key exclude each other") }
        if options.cleartext && options.clientCA != nil { throw UsageError(message: "--client-ca needs TLS") }
        return options
    }
}
