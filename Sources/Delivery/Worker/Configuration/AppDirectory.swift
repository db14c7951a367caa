import PushCore

/// Finds a job's app: by `app` name, else by topic (the bundle ID, with or without a push-type suffix),
/// else the only app when just one is configured.
public struct AppDirectory: Sendable {
    public let apps: [Configuration.AppSettings]
    /// Each app's platform, worked out once: intake asks it for every job.
    public let platforms: [Platform]
    private let byName: [String: Int]
    private let byBundle: [String: Int]

    public init(_ apps: [Configuration.AppSettings]) {
        self.apps = apps
        platforms = apps.map(\.platform)
        var names: [String: Int] = [:]
        var bundles: [String: Int] = [:]
        for (index, app) in apps.enumerated() {
            names[app.name] = index
            if platforms[index].findsAppByTopic { bundles[app.bundleID] = bundles[app.bundleID] ?? index }
        }
        byName = names
        byBundle = bundles
    }

    public enum LookupError: Error, CustomStringConvertible {
        case unknownApp(String)
        case unknownTopic(String)
        case ambiguous
        case noAppFor(Platform)

        public var description: String {
            switch self {
            case .noAppFor(let platform): "no \(platform.displayName) app is configured for this job"

            case .unknownApp(let name): "unknown app '\(name)'"
            case .unknownTopic(let topic): "no configured app has a bundle ID matching topic '\(topic)'"
            case .ambiguous: "the job names neither app nor topic and several apps are configured"
            }
        }
    }

    /// A job that names no app and (APNs) no topic goes to the only app of its platform.
    public func index(app: String?, topic: String?, platform: Platform = .apns) throws(LookupError) -> Int {
        if let app {
            guard let index = byName[app] else { throw .unknownApp(app) }
            return index
        }
        if let topic, platform.findsAppByTopic {
            if let index = byBundle[topic] { return index }
            var best: (Int, Int)? = nil
            for (index, app) in apps.enumerated() where platforms[index] == platform && topic.hasPrefix(app.bundleID + ".") {
                if best == nil || app.bundleID.count > best!.1 { best = (index, app.bundleID.count) }
            }
            if let best { return best.0 }
            throw .unknownTopic(topic)
        }
        let candidates = apps.indices.filter { platforms[$0] == platform }
        guard candidates.count == 1 else { throw candidates.isEmpty ? .noAppFor(platform) : .ambiguous }
        return candidates[0]
    }
}
