/// Prints one job's parts so that h2load and aioapns send the bytes the worker sends.
enum SampleCommand {
    static func run(_ args: ArraySlice<String>) throws {
        let flags = try BenchArguments(args, allowed: ["index"])
        let index = try flags.int("index", default: 0)
        printJSONLine(["token": BenchJobs.token(index), "topic": BenchJobs.topic, "payload": BenchJobs.payload(index),
                       "job": BenchJobs.job(index)])
    }
}
