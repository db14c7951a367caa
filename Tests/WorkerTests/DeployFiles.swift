import Basics
import Foundation
import HeraldTestSupport
import Testing

/// The repository's deployment files (compose, Dockerfile, Kubernetes) read the way the tools that use them
/// would, for the static checks: Docker and Kubernetes do not run on these machines.
enum DeployFiles {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    static func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: path(relative)) }

    /// Every YAML document of a file as JSON values, converted by PyYAML (an independent YAML parser).
    static func yamlDocuments(_ relative: String) throws -> [Any] {
        let python = try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : which("python3"))
        let output = try run(python, ["-c", "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
                                      path(relative)])
        #expect(output.status == 0, "\(relative) does not parse as YAML: \(output.text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(output.text.utf8)) as? [Any])
    }

    /// A one-document YAML file as a JSON object.
    static func yamlObject(_ relative: String) throws -> [String: Any] {
        let documents = try yamlDocuments(relative)
        #expect(documents.count == 1, "\(relative) should hold one YAML document")
        return try #require(documents.first as? [String: Any], "\(relative) is not a mapping")
    }

    /// Runs a program to its end with a deadline, stdout and stderr together.
    static func run(_ executable: String, _ arguments: [String], seconds: Double = 60) throws -> (status: Int32, text: String) {
        let result = try runProgram(executable, arguments, seconds: seconds)
        return (result.status, result.output)
    }

    /// Checks that an argument list is a herald command line: the subcommand exists, and every `--flag` is one
    /// that subcommand's own help lists.
    static func expectHeraldCommand(_ arguments: [String], _ context: String) throws {
        let subcommand = try #require(arguments.first, "\(context): empty command")
        let options = try heraldOptions()
        #expect(options[subcommand] != nil, "'\(subcommand)' of \(context) is not a herald command")
        for flag in arguments where flag.hasPrefix("--") {
            #expect(options[subcommand]?.contains(flag) == true, "\(flag) of \(context) is not an option of herald \(subcommand)")
        }
    }

    /// The built binary's own word on its command line: each command `herald --help` lists, with the options its
    /// `herald <command> --help` lists (`--help` among them); "" holds the options of `herald` itself (`--version`).
    static func heraldOptions() throws -> [String: Set<String>] {
        if let known = heraldOptionsRead.withLock({ $0 }) { return known }
        let herald = try #require(heraldExecutable(), "build herald first (swift build)")
        // An option's row starts at column 2 with its name ("  --config <file>   ..."); wrapped help is indented further.
        func options(_ help: String) -> Set<String> {
            Set(help.split(separator: "\n").filter { $0.hasPrefix("  --") }.map { String($0.dropFirst(2).prefix { $0 != " " }) })
        }
        let help = try run(herald, ["--help"]).text
        let listed = help.components(separatedBy: "COMMANDS:\n").dropFirst().first?.components(separatedBy: "\n\n").first ?? ""
        var found = ["": options(help)]
        for line in listed.split(separator: "\n") where line.hasPrefix("  ") {
            let name = String(line.dropFirst(2).prefix { $0 != " " })
            found[name] = options(try run(herald, [name, "--help"]).text)
        }
        #expect(found.count > 10 && found["worker"]?.contains("--config") == true, "herald's help did not parse: \(help)")
        heraldOptionsRead.withLock { $0 = found }
        return found
    }

    private static let heraldOptionsRead = LockedValue<[String: Set<String>]?>(nil)

    /// The binary's path, uid and default command in the Dockerfile's runtime stage.
    struct Image {
        var binary = ""
        var user = ""
        var command: [String] = []
        var healthcheck: [String] = []
        var environment: [String: String] = [:]
    }

    static func dockerImage() throws -> Image {
        let text = try String(contentsOfFile: path("Dockerfile"), encoding: .utf8)
        let stages = text.components(separatedBy: "\nFROM ")
        let runtime = try #require(stages.last, "no FROM in the Dockerfile")
        var image = Image()
        for line in runtime.split(separator: "\n").map(String.init) {
            func jsonList(_ prefix: String) -> [String]? {
                guard line.hasPrefix(prefix), let start = line.firstIndex(of: "[") else { return nil }
                return (try? JSONSerialization.jsonObject(with: Data(line[start...].utf8))) as? [String]
            }
            if let entry = jsonList("ENTRYPOINT ") { image.binary = entry.first ?? "" }
            if let command = jsonList("CMD ") { image.command = command }
            if line.hasPrefix("HEALTHCHECK "), let range = line.range(of: "CMD [") {
                image.healthcheck = (try? JSONSerialization.jsonObject(with: Data(line[line.index(before: range.upperBound)...].utf8))) as? [String] ?? []
            }
            if line.hasPrefix("USER ") { image.user = String(line.dropFirst("USER ".count)) }
            if line.hasPrefix("ENV "), let equals = line.firstIndex(of: "=") {
                image.environment[String(line[line.index(line.startIndex, offsetBy: 4)..<equals])] = String(line[line.index(after: equals)...])
            }
        }
        return image
    }
}
