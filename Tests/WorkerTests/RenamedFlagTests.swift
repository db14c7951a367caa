import HeraldTestSupport
import Testing

/// Duration flags carry their unit in their name; the old unit-less names still work, say they are deprecated,
/// and cannot be mixed with the new ones.
@Suite struct RenamedFlagTests {
    @Test func oldTimeoutNamesStillWorkAndSayTheyAreDeprecated() throws {
        let herald = try #require(heraldExecutable(), "build herald first (swift build)")
        for command in ["send", "channels", "demo"] {
            let help = try HeraldRun.run(herald: herald, [command, "--help"])
            let renamed = command == "demo" ? "--timeout-seconds" : "--timeout-ms"
            #expect(help.output.contains("  \(renamed) <"), "herald \(command) --help lists no \(renamed)")
            #expect(help.output.contains("Deprecated name of \(renamed)"), "herald \(command) --help: \(help.output)")
        }
        // Out of range under the old name: the range error names the new flag, after the deprecation notice.
        let old = try HeraldRun.run(herald: herald, ["channels", "list", "--app", "x", "--timeout", "5", "--config", "/nonexistent.json"])
        #expect(old.status == 64, "\(old.output)")
        #expect(old.output.contains("--timeout is deprecated; use --timeout-ms"), "\(old.output)")
        #expect(old.output.contains("--timeout-ms must be 100...3600000"), "\(old.output)")
        let both = try HeraldRun.run(herald: herald, ["demo", "--timeout", "5", "--timeout-seconds", "5"])
        #expect(both.status == 64, "\(both.output)")
        #expect(both.output.contains("--timeout is the deprecated name of --timeout-seconds"), "\(both.output)")
    }
}
