import Basics
import DeviceRegistry
import Foundation
import Glibc
import HeraldProviders
import PushCore
import RedisQueue
import Worker

/// `herald devices list|show|import|export|remove`: the device registry (docs/devices.md) from a shell, whether or
/// not `registry.enabled` is set (an operator may fill it before turning it on). Blocking, over every shard.
enum DevicesCommand {
    static let command = Command(
        CommandSpec(
            usageName: "herald devices", abstract: "List, show, import, export or remove registered devices.",
            discussion: """
            list prints an app's devices, one JSON object a line: by --owner or --topic (from their indexes), else \
            every device of the app (--platform narrows it). show prints one device, remove unregisters one (reason \
            unregistered, as DELETE /v1/devices does). import registers the devices of a JSON lines file (- for \
            standard input), each line {"app", "platform", "token", ...attributes}, as PUT /v1/devices does (a \
            device registered again is refreshed); a bad line is reported with its number and the others go on. \
            export writes an app's active and stale devices as lines import reads back (the members the registry \
            wrote, such as state and created_at, are passed over on import). Every shard is read (redis.shards).
            Exits 0, 1 when a device was not found or a line was refused, 64 on usage errors.

            Examples:
              herald devices list --app shop --owner user-42
              herald devices show shop fcm dXNlcjQy...
              herald devices export --app shop > shop.jsonl && herald devices import shop.jsonl
            """,
            positionals: "list|show|import|export|remove [app platform token | file]",
            options: redisOptions + [
                .value("app", "name", "list, export: the app."),
                .value("owner", "id", "list: only this owner's devices."),
                .value("topic", "name", "list: only devices subscribed to this topic."),
                .value("platform", "name", "list, export: only this platform's devices."),
                .value("limit", "n", "list, export: at most this many."),
            ]),
        run: run)

    enum Verb: String { case list, show, `import`, export, remove }

    static func run(_ args: ParsedArguments) throws -> Int32 {
        guard let raw = args.positionals.first else { throw UsageError("give one of list, show, import, export, remove") }
        guard let verb = Verb(rawValue: raw) else { throw UsageError("unknown devices command '\(raw)'; expected list, show, import, export or remove") }
        let platforms = heraldProviders.map { $0.platform }
        let operands = Array(args.positionals.dropFirst())
        var id: DeviceID?
        switch verb {
        case .show, .remove:
            guard operands.count == 3 else { throw UsageError("\(raw) takes <app> <platform> <token>") }
            do { id = try DeviceID.parse(app: operands[0], platform: operands[1], token: operands[2], platforms: platforms) } catch {
                throw UsageError(error.description)
            }
        case .import:
            guard operands.count == 1 else { throw UsageError("import takes one file (- for standard input)") }
        case .list, .export:
            guard operands.isEmpty else { throw UsageError("\(raw) takes --app, not operands") }
            guard args.value("app") != nil else { throw UsageError("\(raw) needs --app") }
        }
        var platform: Platform?
        if let name = args.value("platform") {
            guard let known = Platform(rawValue: name), platforms.contains(known) else {
                throw UsageError("--platform must be one of \(platforms.map(\.rawValue).joined(separator: ", "))")
            }
            platform = known
        }
        let limit = try args.int("limit") ?? .max
        if limit < 1 { throw UsageError("--limit must be at least 1") }
        let settings = try redisSettings(args)
        let redis = try settings.connect()
        defer { redis.close() }
        let registry = DeviceRegistry(redis: redis, shards: settings.shards, settings: registrySettings(args))
        switch verb {
        case .show:
            guard let device = try registry.device(id!) else { return notFound(id!) }
            print(jsonLine(device.json))
        case .remove:
            guard try registry.unregister(id!) else { return notFound(id!) }
            print("removed \(id!)")
        case .list, .export:
            let app = args.value("app")!
            var devices: [Device] = []
            if verb == .list, let owner = args.value("owner") {
                devices = try registry.devices(app: app, owner: owner, platform: platform, limit: limit)
            } else if verb == .list, let topic = args.value("topic") {
                devices = try registry.devices(app: app, topic: topic, platform: platform, limit: limit)
            } else {
                var printed = 0
                var cursor: String? = ""
                while let at = cursor, printed < limit {
                    let page = try registry.page(app: app, platform: platform, cursor: at)
                    for device in page.devices where printed < limit && (verb == .list || device.state != .removed) {
                        print(jsonLine(verb == .export ? exported(device) : device.json))
                        printed += 1
                    }
                    cursor = page.next
                }
                return ExitCode.success
            }
            for device in devices { print(jsonLine(device.json)) }
        case .import:
            return try importLines(operands[0], registry: registry, platforms: platforms)
        }
        return ExitCode.success
    }

    /// An export line: what a registration gives, and `app`, `platform` and `token` (what `import` reads back).
    static func exported(_ device: Device) -> [String: Any] {
        device.json.filter { !DeviceRegistration.storedMembers.contains($0.key) }
    }

    static func importLines(_ path: String, registry: DeviceRegistry, platforms: [Platform]) throws -> Int32 {
        let fd = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw UsageError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { if path != "-" { close(fd) } }
        let reader = LineReader(fd: fd, maxLineBytes: 64 * 1024, stop: nil)
        var counts: [String: Int] = [:]
        var refused = 0
        for (offset, line) in reader.enumerated() where !line.allSatisfy({ $0 == 32 || $0 == 9 }) {
            let registration: (id: DeviceID, attributes: DeviceAttributes, history: DeviceHistory)
            do throws(DeviceError) {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line)) else { throw DeviceError("bad_request", "not JSON") }
                registration = try DeviceRegistration.parse(object, app: nil, platforms: platforms, ignoring: DeviceRegistration.storedMembers)
            } catch {
                refused += 1
                printError("herald devices: line \(offset + 1): \(error.code): \(error.description)")
                continue
            }
            do {
                counts[try registry.register(registration.id, registration.attributes, history: registration.history), default: 0] += 1
            } catch {
                // Redis gone: what is registered stays, the rest is for another run (import is idempotent).
                printError("herald devices: line \(offset + 1): Redis did not register it (\(error)); stopped there, the lines before it are registered")
                refused += 1
                break
            }
        }
        for overlong in reader.overlong {
            refused += 1
            printError("herald devices: line \(overlong.line): longer than \(reader.maxLineBytes) bytes")
        }
        if let failure = reader.readError { throw UsageError("reading \(path): \(failure)") }
        let summary = ["registered", "refreshed", "moved"].map { "\(counts[$0, default: 0]) \($0)" }.joined(separator: ", ")
        print("imported: \(summary), \(refused) refused")
        return refused == 0 ? ExitCode.success : ExitCode.failure
    }

    static func notFound(_ id: DeviceID) -> Int32 {
        printError("herald devices: device \(id) is not registered")
        return ExitCode.failure
    }

    static func jsonLine(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The configuration's `registry` section when the file reads whole; else none that trims the events stream
    /// shorter than any configuration could (its cap, `events_max_length`'s upper bound): a tool run must not cut
    /// the stream the workers keep.
    static func registrySettings(_ args: ParsedArguments) -> Configuration.RegistrySettings {
        if let path = args.value("config") ?? ProcessInfo.processInfo.environment["HERALD_CONFIG"],
           let configuration = try? ConfigurationLoader.load(path: path) {
            return configuration.registry
        }
        var settings = Configuration.RegistrySettings()
        settings.eventsMaxLength = Configuration.RegistrySettings.maxEventsLength
        return settings
    }
}
