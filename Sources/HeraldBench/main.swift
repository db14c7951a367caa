import Foundation

/// `herald-bench`: the benchmark-only helpers scripts/bench drives. Not shipped; every subcommand prints
/// one JSON object on stdout.
let usage = """
USAGE: herald-bench <command> [--flag value ...]
  sample   --index I                       print {"token","topic","payload","job"} of job I
  fill     --redis URL --queue KEY --count N [--first I] [--rate R]
                                           LPUSH N jobs (paced at R/s when given)
  results  --redis URL --key KEY --expect N [--timeout S]
                                           wait for N result entries, then report rate and latency
  send     --host H --port P --ca-file F --key-file F --key-id ID --team-id ID --count N
           [--concurrency C] [--connections K] [--warmup W]
                                           the APNs client alone, straight from memory
  queue    --redis URL --count N [--batch B] [--lanes L] [--prefix P]
                                           claim + ack + result with no APNs at all (jobs must be queued)

"""

func printJSONLine(_ object: [String: Any]) {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    print(String(decoding: data, as: UTF8.self))
}

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("herald-bench: \(message)\n".utf8))
    exit(status)
}

let arguments = CommandLine.arguments.dropFirst()
guard let command = arguments.first else { fail(usage, status: 64) }
let rest = arguments.dropFirst()
do {
    switch command {
    case "sample": try SampleCommand.run(rest)
    case "fill": try FillCommand.run(rest)
    case "results": try ResultsCommand.run(rest)
    case "send": try SendBenchCommand.run(rest)
    case "queue": try QueueBenchCommand.run(rest)
    case "--help", "-h", "help": print(usage, terminator: "")
    default: fail("unknown command '\(command)'\n" + usage, status: 64)
    }
} catch let error as BenchUsageError {
    fail(error.description, status: 64)
} catch {
    fail("\(error)", status: 1)
}
exit(0)
