import Foundation
import HeraldTestSupport
import Testing
import Worker

/// Docker does not run on these machines, so the compose file is checked statically: it parses, and every
/// image, command and file it names exists in the repository.
@Suite struct ComposeFileTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The compose file as JSON, converted by PyYAML (an independent YAML parser).
    static func composeDocument() throws -> [String: Any] {
        let python = try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : which("python3"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
                             root.appendingPathComponent("docker-compose.yml").path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "docker-compose.yml does not parse as YAML")
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func composeFileNamesServicesImagesAndCommandsThatExist() throws {
        let document = try Self.composeDocument()
        let services = try #require(document["services"] as? [String: Any])
        #expect(Set(services.keys).isSuperset(of: ["redis", "mock-apns", "worker-1", "worker-2", "enqueue"]))
        let herald = try #require(heraldExecutable(), "build herald first (swift build)")
        let help = try runAndCapture(herald, ["--help"])
        var workers = 0
        for (name, value) in services {
            let service = try #require(value as? [String: Any], "service \(name)")
            if service["build"] != nil {
                #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent("Dockerfile").path))
                let command = try #require(service["command"] as? [String], "service \(name) has a command list")
                let subcommand = try #require(command.first)
                #expect(help.contains("  \(subcommand) "), "'\(subcommand)' of service \(name) is not a herald command")
                if subcommand == "worker" { workers += 1 }
                // Files under /etc/herald are mounted from ./examples.
                for argument in command where argument.hasPrefix("/etc/herald/") {
                    let local = Self.root.appendingPathComponent("examples").appendingPathComponent(String(argument.dropFirst("/etc/herald/".count)))
                    #expect(FileManager.default.fileExists(atPath: local.path), "\(argument) of service \(name) is not in examples/")
                }
                // Every flag the command passes must be one herald accepts: ask the command's own help.
                let commandHelp = try runAndCapture(herald, [subcommand, "--help"])
                for flag in command where flag.hasPrefix("--") {
                    #expect(commandHelp.contains(flag), "\(flag) is not an option of herald \(subcommand)")
                }
            } else {
                #expect(service["image"] as? String != nil, "service \(name) names no image")
            }
        }
        #expect(workers == 2)
    }

    @Test func composeConfigurationLoads() throws {
        let path = Self.root.appendingPathComponent("examples/compose.json").path
        let configuration = try ConfigurationLoader.load(path: path, environment: [:])
        #expect(configuration.apps.map(\.name) == ["demo"])
        #expect(configuration.redis.url == "redis://redis:6379/0")
        let example = try ConfigurationLoader.load(path: Self.root.appendingPathComponent("examples/herald.json").path, environment: [:])
        #expect(example.apps.count == 2)
    }

    private func runAndCapture(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
