import Basics

extension Command {
    /// A `herald-bench <name>` subcommand; unknown flags are usage errors so a typo in scripts/bench fails
    /// loudly instead of benchmarking the default. Each prints one JSON object and exits 0.
    init(bench name: String, abstract: String, options: [OptionSpec], run: @escaping @Sendable (ParsedArguments) throws -> Void) {
        self.init(CommandSpec(usageName: "herald-bench \(name)", abstract: abstract, options: options)) { arguments in
            try run(arguments)
            return ExitCode.success
        }
    }
}

/// The defaults scripts/bench relies on, written where the flag is read.
extension ParsedArguments {
    func int(_ name: String, default fallback: Int) throws(UsageError) -> Int {
        try integer(name, as: Int.self, in: 0...Int.max) ?? fallback
    }

    func double(_ name: String, default fallback: Double) throws(UsageError) -> Double {
        try double(name, minimum: 0) ?? fallback
    }
}

/// A benchmark step that failed (Redis refused a command): exit 1 with the message.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
