import Basics
/// Prints one job's parts so that h2load and aioapns send the bytes the worker sends.
enum SampleCommand {
    static let command = Command(
        bench: "sample", abstract: "Print {\"token\",\"topic\",\"payload\",\"job\"} of one benchmark job.",
        options: [.value("index", "i", "Which job (default 0).")],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        let index = try flags.int("index", default: 0)
        printJSONLine(["token": BenchJobs.token(index), "topic": BenchJobs.topic, "payload": BenchJobs.payload(index),
                       "job": BenchJobs.job(index)])
    }
}
