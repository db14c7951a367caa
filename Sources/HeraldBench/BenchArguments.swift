/// `--name value` / `--name=value` flags of one `herald-bench` subcommand; unknown flags are an error so a
/// typo in scripts/bench fails loudly instead of benchmarking the default.
struct BenchArguments {
    private var values: [String: String] = [:]

    init(_ arguments: ArraySlice<String>, allowed: Set<String>) throws(BenchUsageError) {
        var rest = arguments[...]
        while let first = rest.popFirst() {
            guard first.hasPrefix("--") else { throw BenchUsageError("unexpected argument '\(first)'") }
            var name = String(first.dropFirst(2))
            var value: String
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            } else {
                guard let next = rest.popFirst() else { throw BenchUsageError("--\(name) needs a value") }
                value = next
            }
            guard allowed.contains(name) else { throw BenchUsageError("unknown flag --\(name)") }
            values[name] = value
        }
    }

    func string(_ name: String) -> String? { values[name] }

    func required(_ name: String) throws(BenchUsageError) -> String {
        guard let value = values[name] else { throw BenchUsageError("missing --\(name)") }
        return value
    }

    func int(_ name: String, default fallback: Int) throws(BenchUsageError) -> Int {
        guard let text = values[name] else { return fallback }
        guard let value = Int(text), value >= 0 else { throw BenchUsageError("--\(name) must be a non-negative integer") }
        return value
    }

    func double(_ name: String, default fallback: Double) throws(BenchUsageError) -> Double {
        guard let text = values[name] else { return fallback }
        guard let value = Double(text), value >= 0 else { throw BenchUsageError("--\(name) must be a non-negative number") }
        return value
    }
}

struct BenchUsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
