import Basics
import Testing

/// The one argument parser every executable uses: what it accepts, what is a usage error, and its help.
@Suite struct ParsedArgumentsTests {
    static let spec = CommandSpec(
        usageName: "tool run", abstract: "Runs.", positionals: "[<file>...]",
        options: [
            .value("url", "url", "Where."),
            .value("tag", "name", "A tag.", repeatable: true),
            .value("count", "n", "How many."),
            .flag("quiet", "Less output."),
        ],
        environment: [EnvironmentSpec("TOOL_URL", "Default for --url.")])

    static let noPositionals = CommandSpec(usageName: "tool plain", abstract: "Plain.", options: [.flag("x", "X.")])

    @Test func acceptsBothValueFormsRepeatsFlagsAndPositionals() throws {
        let parsed = try ParsedArguments.parse(["--url", "a", "--tag=one", "f1", "--tag", "two", "--quiet", "--count=-3", "--", "--quiet"], spec: Self.spec)
        #expect(parsed.value("url") == "a")
        #expect(parsed.all("tag") == ["one", "two"])
        #expect(parsed.flag("quiet"))
        #expect(try parsed.int("count") == -3)
        #expect(parsed.positionals == ["f1", "--quiet"])
        #expect(!parsed.helpRequested)
        #expect(try ParsedArguments.parse(["--url=--odd"], spec: Self.spec).value("url") == "--odd")
    }

    @Test(arguments: [
        (["--nope"], "unknown option '--nope'"),
        (["-q"], "unknown option '-q'"),
        (["--url"], "--url needs a value (<url>)"),
        (["--url", "--quiet"], "--url needs a value (<url>)"),
        (["--url", "a", "--url", "b"], "--url given more than once"),
        (["--quiet=yes"], "--quiet takes no value"),
    ])
    func mistakesAreUsageErrors(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try ParsedArguments.parse(arguments, spec: Self.spec) }
    }

    @Test func strayArgumentsAreUsageErrorsWhereNoneAreDeclared() {
        #expect(throws: UsageError("unexpected argument 'file'")) { try ParsedArguments.parse(["file"], spec: Self.noPositionals) }
        #expect(throws: UsageError("unexpected argument 'file'")) { try ParsedArguments.parse(["--", "file"], spec: Self.noPositionals) }
    }

    @Test func typedValuesCheckTheirRange() throws {
        let parsed = try ParsedArguments.parse(["--count", "70000", "--url", "x,  y ,,z"], spec: Self.spec)
        #expect(throws: UsageError("--count must be in 0...65535, got 70000")) { try parsed.integer("count", as: Int.self, in: 0...65535) }
        #expect(throws: UsageError("--count expects a whole number, got '70000'")) { try parsed.integer("count", as: UInt8.self) }
        #expect(throws: UsageError("--url expects a number, got 'x,  y ,,z'")) { try parsed.double("url") }
        #expect(parsed.list("url") == ["x", "y", "z"])
        #expect(throws: UsageError("missing --tag")) { try parsed.required("tag") }
    }

    @Test func helpWinsOverMistakesAndListsEveryOptionOnce() throws {
        #expect(try ParsedArguments.parse(["--nope", "-h"], spec: Self.spec).helpRequested)
        #expect(try ParsedArguments.parse(["--help"], spec: Self.spec).helpRequested)
        #expect(throws: UsageError("unknown option '--nope'")) { try ParsedArguments.parse(["--nope", "--", "--help"], spec: Self.spec) }
        let help = Self.spec.help
        #expect(help.hasPrefix("OVERVIEW: Runs.\n\nUSAGE: tool run [options] [<file>...]\n"))
        for row in ["  --url <url>", "  --tag <name>", "A tag. Repeatable.", "  --quiet", "  --help", "ENVIRONMENT:\n  TOOL_URL"] {
            #expect(help.contains(row), "help lacks \(row):\n\(help)")
        }
    }

    @Test func aGroupDispatchesAndReportsUnknownCommandsAs64() {
        let group = CommandGroup(program: "tool", abstract: "Tools.", commands: [Command(Self.noPositionals) { $0.flag("x") ? 7 : 3 }], version: "tool 1")
        #expect(group.main(["plain", "--x"]) == 7)
        #expect(group.main(["plain"]) == 3)
        #expect(group.main(["plain", "--y"]) == 64)
        #expect(group.main(["other"]) == 64)
        #expect(group.main([]) == 64)
        #expect(group.main(["--version"]) == 0)
        #expect(group.help.contains("  plain         Plain.") && group.help.contains("--version"))
    }
}
