import Basics
import Foundation
import HeraldTestSupport
import Testing

/// Issue 52: one table of exit codes for every tool, documented; Redis out of reach is 69, not a bare 1.
@Suite struct ExitCodeTests {
    @Test func theDocumentedTableIsTheCodesTable() throws {
        let text = try String(contentsOfFile: DeployFiles.path("docs/operations.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## Exit codes\n").dropFirst().first?.components(separatedBy: "\n## ").first)
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| code") }.map { line in
            line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        }
        #expect(rows.map { Int32($0[1]) } == ExitCode.table.map(\.code))
        #expect(rows.map { $0[2] } == ExitCode.table.map(\.meaning))
    }

    @Test func aToolThatCannotReachRedisExits69() throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
        let closed = freeLoopbackPort()
        for command in [["stats"], ["tail", "--count", "1"], ["dead", "list"], ["scheduled", "list"]] {
            let run = try HeraldRun.run(herald: herald, command + ["--redis", "redis://127.0.0.1:\(closed)/0"])
            #expect(run.status == ExitCode.unavailable, "\(command): \(String(describing: run.status)) \(run.output)")
            #expect(run.output.contains("cannot connect to Redis"), "\(command): \(run.output)")
        }
    }
}
