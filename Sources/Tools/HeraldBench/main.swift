import Basics
import Foundation
import TLS

// Before anything can touch OpenSSL (see its comment).
keepOpenSSLUntilExit()

/// `herald-bench`: the benchmark-only helpers scripts/bench drives. Not shipped; every subcommand prints
/// one JSON object on stdout.
let bench = CommandGroup(
    program: "herald-bench", abstract: "Benchmark helpers for scripts/bench (not part of the shipped tool).",
    commands: [SampleCommand.command, FillCommand.command, ResultsCommand.command, SendBenchCommand.command, FCMSendBenchCommand.command, WebPushSendBenchCommand.command,
               QueueBenchCommand.command, MulticastCommand.command, FairShareCommand.command, DevicesCommand.command, CampaignOutcomesCommand.command])

func printJSONLine(_ object: [String: Any]) {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    print(String(decoding: data, as: UTF8.self))
}

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("herald-bench: \(message)\n".utf8))
    exit(status)
}

exit(bench.main(Array(CommandLine.arguments.dropFirst())))
