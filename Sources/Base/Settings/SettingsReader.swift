import Basics
import Foundation

/// Reads declared settings out of a parsed JSON object: each value at its dotted key, wrong types and bounds as
/// problems naming the key, and every key no declaration names as an unknown setting.
public enum SettingsReader {
    public static func apply<Root>(_ settings: [Setting<Root>], object: [String: Any], to root: inout Root, at prefix: String) -> [String] {
        var problems: [String] = []
        var known: [String: Set<String>] = [:]  // object path ("" or "redis.tls") -> its declared member names
        var notObjects = Set<String>()
        for setting in settings {
            let parts = setting.key.split(separator: ".").map(String.init)
            for depth in 0..<parts.count { known[parts[..<depth].joined(separator: "."), default: []].insert(parts[depth]) }
            var current = object
            var path: [String] = []
            var found = true
            for part in parts.dropLast() {
                path.append(part)
                guard let next = current[part] else { found = false; break }
                guard let inner = next as? [String: Any] else {
                    let name = prefix + path.joined(separator: ".")
                    if notObjects.insert(name).inserted { problems.append("\(name) must be an object") }
                    found = false
                    break
                }
                current = inner
            }
            guard found, let value = current[parts.last!] else { continue }
            if let problem = setting.read(value, &root, prefix + setting.key) { problems += problem.split(separator: "\n").map(String.init) }
        }
        problems += unknownKeys(object, known: known, path: "", at: prefix)
        return problems
    }

    /// Members of `object` (and of the declared objects inside it) that no declaration names. Keys starting
    /// with `//` are comments (JSON has none), so a shipped example can explain itself; a typo of a real key
    /// never starts that way, so it is still caught.
    public static func unknownKeys(_ object: [String: Any], known: [String: Set<String>], path: String, at prefix: String) -> [String] {
        let names = known[path] ?? []
        var problems: [String] = []
        for key in object.keys.sorted() where !key.hasPrefix("//") {
            let child = path.isEmpty ? key : path + "." + key
            if !names.contains(key) {
                problems.append(Suggestion.text("unknown setting '\(prefix)\(child)'", word: key, among: names.sorted(),
                                                prefix: prefix + (path.isEmpty ? "" : path + ".")))
            } else if known[child] != nil, let inner = object[key] as? [String: Any] {
                problems += unknownKeys(inner, known: known, path: child, at: prefix)
            }
        }
        return problems
    }
}

/// A provider's section of the configuration file (`fcm`), declared in its module, rooted at its settings type.
public protocol DeclaredSection: Sendable {
    /// Its key at the top of the file.
    static var section: String { get }
    /// Its settings, keys relative to the section.
    static var declared: [Setting<Self>] { get }
}

/// Bounds the declarations share, whichever module declares them.
public enum SettingBounds {
    /// The longest timeout a setting in milliseconds takes: an hour.
    public static let maxTimeoutMs = 3_600_000
}
