/// `herald demo`: see scripts/demo.
enum DemoCommand {
    static let spec = CommandSpec(
        name: "demo", abstract: "Run the demo: local Redis, the simulator, a worker and sample jobs, then a summary.",
        options: [], run: { _ in
            printError("herald demo: not yet built")
            return ExitCode.unavailable
        })
}
