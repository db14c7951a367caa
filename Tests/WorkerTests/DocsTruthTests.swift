import Basics
import Foundation
import HeraldProviders
import HeraldTestSupport
import Testing
@testable import Worker

/// Issue 52: the docs named a flag that did not exist, a unit count that was wrong, log lines that were missing,
/// and nothing read them. This reads README.md and docs/*.md and holds every name written in a form that says what
/// it is to what it names:
/// - `herald <command> --flag ...` (a backquoted span, or a line of a code block that runs herald): the command and
///   its flags as the built binary's `--help` lists them;
/// - `herald_...` metric names: a family the code declares (`"herald_x", .counter`), a histogram's series under
///   its family's name, `herald_x_*` a prefix of one; the old names of "## Renamed metrics" are left alone;
/// - `Herald...` alert names (every one not a module of Package.swift): an alert of deploy/prometheus;
/// - `section.key` configuration keys of a known section: a declared `Setting` (`Configuration.settings`), or a
///   group or `*` pattern of them;
/// - log lines (a backquoted span followed by `(info`, `(warning` or `(error`, and the first column of the log
///   tables): a string of the code, its interpolations and the doc's `<placeholders>` matching anything;
/// - `herald-*.service` units: a file of deploy/systemd; "exits N": a code of `ExitCode.table` (whose own
///   table `ExitCodeTests` holds); `deploy/...`, `scripts/...` paths and relative links: files that exist;
/// - `scripts/<name> --flag`: a flag the script (or its `<name>.py`) names; `HERALD_*` variables: read somewhere
///   (Sources, scripts, Tests, deploy, the compose files and the Dockerfile).
/// Loose words are not read: a name counts only in one of those forms.
@Suite struct DocsTruthTests {
    /// What the docs' names may name, read from the binary, the code and the deploy files.
    struct Truth {
        var options: [String: Set<String>] = [:]
        var metrics: Set<String> = []
        var alerts: Set<String> = []
        var modules: Set<String> = []
        var settings: [String] = []
        var sections: Set<String> = []
        /// The code's string literals, an interpolation as U+0000 (log lines are found among them).
        var literals: [String] = []
        /// The messages the code logs with a literal (`logger.info("...")`, `log(.warning, "...")`, the forwarder's
        /// `log("...")`), the simulators' left out, each with its file.
        var logged: [(file: String, message: String)] = []
        var exitCodes: Set<Int32> = []
        var chaosFaults = ""
        /// Every `HERALD_*` name the code, scripts, tests and deploy files spell.
        var variables: Set<String> = []
    }

    static func truth() throws -> Truth {
        var truth = Truth()
        truth.options = try DeployFiles.heraldOptions()
        let sources = try swiftFiles(under: DeployFiles.path("Sources"))
        let declaration = try NSRegularExpression(pattern: #""(herald_[a-z0-9_]+)",\s*\.(?:gauge|counter|histogram|summary)\b"#)
        let logCall = try NSRegularExpression(pattern: #"(?:[lL]ogger\??\.(?:info|warning|error)\(|\blog\(\.(?:info|warning|error),|\blog\()\s*"#)
        for (path, text) in sources {
            for match in declaration.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                truth.metrics.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
            let literals = stringLiterals(Array(text.utf8))
            truth.literals += literals.map(\.text)
            guard !path.hasPrefix("Simulators/") else { continue }
            let calls = Set(logCall.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
                Range(match.range, in: text).map { text.utf8.distance(from: text.startIndex, to: $0.upperBound) }
            })
            truth.logged += literals.filter { calls.contains($0.offset) }.map { (path, $0.text) }
        }
        truth.alerts = Set(try AlertRulesTests.alertRules().compactMap { $0["alert"] as? String })
        let package = try String(contentsOfFile: DeployFiles.path("Package.swift"), encoding: .utf8)
        truth.modules = Set(matches(#"name: "(\w+)""#, in: package))
        truth.settings = Configuration.settings.map(\.key)
        truth.sections = Set(Configuration.sections(heraldProviders))
        truth.exitCodes = Set(ExitCode.table.map(\.code))
        truth.chaosFaults = try String(contentsOfFile: DeployFiles.path("scripts/chaos.py"), encoding: .utf8)
        var spelled = sources.map(\.text)
        // Not this file: its made-up names would name themselves.
        let own = URL(fileURLWithPath: #filePath).lastPathComponent
        for folder in ["scripts", "Tests", "deploy"] { spelled += try textFiles(under: DeployFiles.path(folder)) { !$0.hasSuffix(own) }.map(\.text) }
        let root = try FileManager.default.contentsOfDirectory(atPath: DeployFiles.path(".")).filter { $0.hasPrefix("docker-compose") || $0 == "Dockerfile" }
        spelled += try root.map { try String(contentsOfFile: DeployFiles.path($0), encoding: .utf8) }
        for text in spelled { truth.variables.formUnion(matches(#"\b(HERALD_[A-Z0-9_]+)\b"#, in: text)) }
        return truth
    }

    /// The docs the checker reads: README.md and docs/*.md.
    static func documents() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: DeployFiles.path("docs")).filter { $0.hasSuffix(".md") }.sorted()
        return ["README.md"] + docs.map { "docs/" + $0 }
    }

    @Test func everyNameTheDocsGiveIsThere() throws {
        let truth = try Self.truth()
        #expect(truth.metrics.count > 50 && truth.alerts.count > 15 && truth.settings.count > 80 && truth.literals.count > 1_000,
                "the code was not read: \(truth.metrics.count) metrics, \(truth.alerts.count) alerts, \(truth.settings.count) settings")
        var checked = 0
        var found: [String] = []
        for file in try Self.documents() {
            let text = try String(contentsOfFile: DeployFiles.path(file), encoding: .utf8)
            let result = Self.falseNames(in: text, file: file, truth: truth)
            checked += result.checked
            found += result.problems
        }
        #expect(checked > 500, "only \(checked) names were read from the docs")
        #expect(found.isEmpty, "the docs name what is not there:\n\(found.joined(separator: "\n"))")
    }

    /// The checker can fail: a doc of made-up names, one of each kind, is caught name by name, and the same lines
    /// with true names pass.
    @Test func aMadeUpNameOfEachKindIsCaught() throws {
        let truth = try Self.truth()
        let template = """
            # A page

            Run `herald NAME_COMMAND --config FILE`, or `herald worker NAME_FLAG`; `herald NAME_GLOBAL` prints it.
            ```sh
            sudo -u herald herald enqueue NAME_CODEFLAG --file jobs.jsonl   # a comment
            ```
            Watch `rate(NAME_METRIC[5m])` and the alert [NAME_ALERT](alerts.md); set `NAME_KEY` to 5.
            It logs `NAME_LOG` (info) and is installed as `NAME_UNIT`; a broken file exits NAME_EXIT.
            The rules are in `NAME_PATH`, the rest in [the runbook](NAME_LINK).
            Measure with `scripts/bench NAME_SCRIPTFLAG`; `NAME_ENV` overrides it.

            ## Log lines
            | `msg` | level |
            |---|---|
            | `NAME_TABLELOG` | info |
            """
        let names: [(placeholder: String, made: String, real: String)] = [
            ("NAME_COMMAND", "frobnicate", "check-config"),
            ("NAME_FLAG", "--frobnicate", "--id"),
            ("NAME_GLOBAL", "--frobnicate", "--version"),
            ("NAME_CODEFLAG", "--frobnicate", "--queue herald:queue"),
            ("NAME_METRIC", "herald_frobnications_total", "herald_results_total"),
            ("NAME_ALERT", "HeraldFrobnicationStorm", "HeraldNoWorkers"),
            ("NAME_KEY", "worker.frobnicate_ms", "worker.lease_seconds"),
            ("NAME_LOG", "frobnication complete", "redis connected"),
            ("NAME_UNIT", "herald-frobnicator.service", "herald-worker@2.service"),
            ("NAME_EXIT", "77", "78"),
            ("NAME_PATH", "deploy/prometheus/frobnicate.yml", "deploy/prometheus/herald-rules.yml"),
            ("NAME_LINK", "frobnicate.md#top", "alerts.md#heraldnoworkers"),
            ("NAME_TABLELOG", "frobnicator started", "worker started"),
            ("NAME_SCRIPTFLAG", "--frobnicate", "--quick --check"),
            ("NAME_ENV", "HERALD_FROBNICATE", "HERALD_REDIS_URL"),
        ]
        func page(_ pick: (String, String) -> String) -> String {
            names.reduce(template) { $0.replacingOccurrences(of: $1.placeholder, with: pick($1.made, $1.real)) }
        }
        let made = Self.falseNames(in: page { made, _ in made }, file: "docs/made-up.md", truth: truth)
        for name in names {
            let caught = made.problems.filter { $0.contains(name.made) }
            #expect(!caught.isEmpty, "\(name.placeholder) \(name.made) was not caught: \(made.problems)")
        }
        #expect(made.problems.count == names.count, "one problem per made-up name: \(made.problems.joined(separator: "\n"))")
        let real = Self.falseNames(in: page { _, real in real }, file: "docs/made-up.md", truth: truth)
        #expect(real.problems.isEmpty, "true names were refused: \(real.problems)")
        #expect(real.checked >= names.count, "\(real.checked) names read")
    }

    /// docs/observability.md's log table says it is the complete list (issue 52: `fcm connected` was missing): every
    /// message the code logs with a literal, but the simulators', is one of its rows (the code's interpolations and
    /// the table's `<placeholders>` match anything).
    @Test func theLogTableListsEveryMessageTheCodeLogs() throws {
        let truth = try Self.truth()
        #expect(truth.logged.count > 40 && truth.logged.contains { $0.message == "worker started" }, "the log calls were not found: \(truth.logged)")
        let text = try String(contentsOfFile: DeployFiles.path("docs/observability.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "\n## Log lines\n").dropFirst().first?.components(separatedBy: "\n## ").first)
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| `") && !$0.hasPrefix("| `msg`") }
        let listed = rows.flatMap { Self.tableMessages(String($0.dropFirst(2).prefix { $0 != "|" })) }
        #expect(listed.count > 40, "docs/observability.md's log table did not parse: \(listed)")
        let missing = truth.logged.filter { code in !listed.contains { Self.isLogged($0, literals: [code.message]) } }
            .map { "\($0.file): \($0.message.replacingOccurrences(of: "\u{0}", with: "<...>"))" }
        #expect(missing.isEmpty, "logged but not in docs/observability.md's log table:\n\(missing.joined(separator: "\n"))")
    }

    /// Issue 52: the `progress` line's fields, as both log tables list them, are the counters the worker logs
    /// (`PipelineCounters.logFields`) and the two gauges it adds; six counters were missing.
    @Test func theProgressLinesFieldsInTheDocsAreTheOnesItLogs() throws {
        let logged = Set(PipelineCounters().logFields.keys).union(["in_flight", "backlog"])
        for (file, row, cell) in [("docs/observability.md", "| `progress` | info |", 2), ("docs/operations.md", "| `progress` (info", 1)] {
            let text = try String(contentsOfFile: DeployFiles.path(file), encoding: .utf8)
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(row) }, "\(file) has no row \(row)")
            let cells = line.split(separator: "|").map(String.init)
            // Operations' meaning column also names words in brackets: only the fields themselves count.
            let names = Set(Self.matches("`([a-z_]+)`", in: cells[cell].replacingOccurrences(of: #"\([^)]*\)"#, with: "", options: .regularExpression)))
            #expect(names == logged, "\(file): the progress fields \(names.sorted()); logged: \(logged.sorted())")
        }
    }

    /// The names of one doc that name nothing, as `file:line: what`, and how many names were read.
    static func falseNames(in text: String, file: String, truth: Truth) -> (problems: [String], checked: Int) {
        var problems: [String] = []
        var checked = 0
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var inCode = false
        var heading = ""
        var index = 0
        while index < lines.count {
            let number = index + 1
            var line = lines[index]
            index += 1
            func problem(_ what: String) { problems.append("\(file):\(number): \(what)") }
            func check(_ ok: Bool, _ what: @autoclosure () -> String) {
                checked += 1
                if !ok { problem(what()) }
            }
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { inCode.toggle(); continue }
            if !inCode && line.hasPrefix("#") { heading = line; continue }
            // Everywhere: alert names, unit files, metric names in code.
            for name in matches(#"\b(Herald[A-Z][A-Za-z0-9]+)\b"#, in: line) where !truth.modules.contains(name) {
                check(truth.alerts.contains(name), "alert \(name) is not a rule of \(AlertRulesTests.rules)")
            }
            for unit in matches(#"\b(herald-[a-z0-9-]*(?:@[a-z0-9]*)?\.service(?:\.d)?)"#, in: line) {
                let file = unit.replacingOccurrences(of: #"@[a-z0-9]+\."#, with: "@.", options: .regularExpression)
                check(DeployFiles.exists("deploy/systemd/" + file), "unit \(unit) is not in deploy/systemd/")
            }
            if inCode {
                // A line that runs herald (after `sudo -u herald`, a path, variables), continued over `\` ends.
                while line.hasSuffix("\\") && index < lines.count { line = String(line.dropLast()) + " " + lines[index]; index += 1 }
                let command = line.replacingOccurrences(of: #"\s#.*$"#, with: "", options: .regularExpression)
                if let run = matches(#"^\s*(?:\$ )?(?:sudo -u \S+ )?(?:ExecStart=)?(?:[A-Z_]+=\S* )*(?:\S*/)?(herald [^|;&]*)"#, in: command).first {
                    checkCommand(run, truth: truth, check: check)
                }
                if let run = matches(#"^\s*(?:[A-Z_]+=\S* )*(scripts/[^|;&]*)"#, in: command).first { checkScript(run, check: check) }
                for variable in matches(#"\b(HERALD_[A-Z0-9_]+)\b"#, in: line) { checkVariable(variable, truth: truth, check: check) }
                for metric in matches(#"(?<![A-Za-z0-9_])(herald_[a-z0-9_]+\*?)"#, in: line) { checkMetric(metric, truth: truth, check: check) }
                continue
            }
            let isHeader = index < lines.count && lines[index].hasPrefix("|-")
            let firstCell = line.hasPrefix("| ") && !isHeader ? String(line.dropFirst(2).prefix { $0 != "|" }) : ""
            for span in matches("`([^`]+)`", in: line) {
                if span.hasPrefix("herald ") { checkCommand(span, truth: truth, check: check) }
                for metric in matches(#"(?<![A-Za-z0-9_])(herald_[a-z0-9_]+\*?)"#, in: span) {
                    // The old names of the renamed table name what is gone.
                    if heading == "## Renamed metrics" && firstCell.contains("`\(span)`") { continue }
                    checkMetric(metric, truth: truth, check: check)
                }
                checkKey(span, truth: truth, check: check)
                checkPath(span, file: file, check: check)
                if span.hasPrefix("scripts/") { checkScript(span, check: check) }
                for variable in matches(#"\b(HERALD_[A-Z0-9_]+)\b"#, in: span) { checkVariable(variable, truth: truth, check: check) }
            }
            // Log lines: a span said to be logged at a level, and the first column of the log tables.
            var messages = matches(#"`([^`]+)` \((?:info|warning|error|debug)\b"#, in: line)
            if heading == "## Log lines" || heading == "## What the logs mean" {
                messages += tableMessages(firstCell)
            }
            for message in Set(messages) {
                check(isLogged(message, literals: truth.literals), "log line `\(message)` is written nowhere in Sources/")
            }
            for code in matches(#"\bexit(?:s|ed)?(?: (?:status|code|with))? `?([0-9]+)\b"#, in: line) {
                check(truth.exitCodes.contains(Int32(code) ?? -1), "exit code \(code) is not one of ExitCode.table (docs/operations.md, \"Exit codes\")")
            }
            for link in matches(#"\]\(([^)\s]+)\)"#, in: line) where !link.contains("://") && !link.hasPrefix("#") && !link.hasPrefix("mailto:") {
                let target = String(link.prefix { $0 != "#" })
                let resolved = URL(fileURLWithPath: DeployFiles.path(file)).deletingLastPathComponent().appendingPathComponent(target).path
                check(FileManager.default.fileExists(atPath: resolved), "link \(link) leads to no file")
            }
        }
        return (problems, checked)
    }

    /// The messages a log table's first cell names, not the words in brackets after them ("(info, `herald
    /// scheduler` only)").
    static func tableMessages(_ cell: String) -> [String] {
        var quoted = false
        let messages = cell.prefix { character in
            if character == "`" { quoted.toggle() }
            return quoted || character != "("
        }
        return matches("`([^`]+)`", in: String(messages))
    }

    /// `herald <command> [--flag ...]` or `herald --flag`: the command is one `herald --help` lists, each flag one
    /// its help lists. `herald stats: ...` (a quoted message) and `herald mock-<x>` (a pattern) are not commands.
    static func checkCommand(_ text: String, truth: Truth, check: (Bool, @autoclosure () -> String) -> Void) {
        let words = text.split(separator: " ").map(String.init)
        guard words.count > 1 else { return }
        let command = words[1].hasPrefix("--") ? "" : words[1]
        guard command.isEmpty || command.range(of: "^[a-z][a-z0-9-]*[a-z0-9]$", options: .regularExpression) != nil else { return }
        check(truth.options[command] != nil, "`herald \(command)` is not a command of herald --help")
        guard let options = truth.options[command] else { return }
        for word in words.dropFirst(command.isEmpty ? 1 : 2) {
            for flag in matches(#"^\[?(--[a-z][a-z0-9-]*)"#, in: word) {
                check(options.contains(flag), "\(flag) is not an option of `herald\(command.isEmpty ? "" : " " + command)` (its --help)")
            }
        }
    }

    /// A family the code declares, a histogram's `_bucket`/`_sum`/`_count` under its family, `x_*` a prefix of one.
    static func checkMetric(_ name: String, truth: Truth, check: (Bool, @autoclosure () -> String) -> Void) {
        if name.hasSuffix("*") {
            return check(truth.metrics.contains { $0.hasPrefix(name.dropLast()) }, "no metric family starts \(name.dropLast())")
        }
        let family = ["_bucket", "_sum", "_count"].first { name.hasSuffix($0) && truth.metrics.contains(String(name.dropLast($0.count))) }
        check(truth.metrics.contains(name) || family != nil, "metric \(name) is declared nowhere in Sources/")
    }

    /// `section.key` (maybe `= value` or `: value` after it) of a configuration section: a declared key, a group
    /// of them (`redis.tls`), or a `*` pattern that matches one. Host and file names (`api.yaml`) are not keys, nor
    /// scripts/chaos.py's fault names (`worker.sigkill`), Lua's `redis.call` and the members of an FCM message's
    /// `apns` block (Google's `ApnsConfig`: `apns.headers`, `apns.payload`).
    static func checkKey(_ span: String, truth: Truth, check: (Bool, @autoclosure () -> String) -> Void) {
        guard let key = matches(#"^([a-z][a-z_]*\.[a-z_*][a-z0-9_*]*(?:\.[a-z_*][a-z0-9_*]*)*)(?:\s*[:=].*)?$"#, in: span).first,
              let section = key.split(separator: ".").first, truth.sections.contains(String(section)),
              !["yaml", "yml", "json", "com", "md", "h"].contains(key.split(separator: ".").last ?? ""),
              !truth.chaosFaults.contains("\"\(key)\""), key != "redis.call", !Self.fcmAPNsMembers.contains(key) else { return }
        let pattern = "^" + NSRegularExpression.escapedPattern(for: key).replacingOccurrences(of: "\\*", with: "[a-z0-9_]*") + "(\\..*)?$"
        check(truth.settings.contains { $0.range(of: pattern, options: .regularExpression) != nil },
              "configuration key \(key) is not declared (Configuration.settings, docs/configuration.md)")
    }

    /// `scripts/<name> ... --flag`: the script, or the Python program beside it that it runs, spells the flag.
    static func checkScript(_ text: String, check: (Bool, @autoclosure () -> String) -> Void) {
        let words = text.split(separator: " ").map(String.init)
        guard let script = words.first, words.count > 1 else { return }
        let program = ["", ".py"].compactMap { try? String(contentsOfFile: DeployFiles.path(script + $0), encoding: .utf8) }.joined()
        for word in words.dropFirst() {
            for flag in matches(#"^\[?(--[a-z][a-z0-9-]*)"#, in: word) {
                check(program.contains(flag), "\(flag) is not an option of \(script) (nowhere in its text)")
            }
        }
    }

    /// A `HERALD_*` variable: some code, script, test or deploy file spells it.
    static func checkVariable(_ name: String, truth: Truth, check: (Bool, @autoclosure () -> String) -> Void) {
        check(truth.variables.contains(name), "environment variable \(name) is read nowhere (Sources, scripts, Tests, deploy)")
    }

    static let fcmAPNsMembers: Set<String> = ["apns.headers", "apns.payload", "apns.fcm_options", "apns.live_activity_token"]

    /// A repository path (`deploy/...`, `scripts/bench --quick`'s first word): a file or folder that exists; a test
    /// named without `.swift` counts. Patterns with `<x>` or `*` are not paths.
    static func checkPath(_ span: String, file: String, check: (Bool, @autoclosure () -> String) -> Void) {
        guard let path = matches(#"^((?:deploy|scripts|docs|examples|schemas|Sources|Tests|Fuzz)/[A-Za-z0-9_.@/+-]*)(?: |$)"#, in: span).first else { return }
        check(DeployFiles.exists(path) || DeployFiles.exists(path + ".swift"), "\(path) does not exist")
    }

    /// Whether a message the docs give is a string of the code: the doc's `<x>`, `N` and `...` match anything in the
    /// code's text, the code's interpolations anything in the doc's.
    static func isLogged(_ message: String, literals: [String]) -> Bool {
        let docParts = message.replacingOccurrences(of: #"<[^>]*>|\.\.\.|…|\bN\b"#, with: "\u{0}", options: .regularExpression)
            .split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
        return literals.contains { literal in
            guard literal != message else { return true }
            if docParts.count > 1 && globMatches(docParts, literal) { return true }
            // The code's text must be most of the doc's: "\(x)" or "\(a) \(b)" alone matches anything.
            let parts = literal.split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
            return parts.count > 1 && parts.joined().count * 2 >= message.count && globMatches(parts, message)
        }
    }

    /// `parts` joined by "anything" matches the whole of `text`.
    static func globMatches(_ parts: [String], _ text: String) -> Bool {
        guard parts.count > 1 else { return parts.first == text }
        guard text.hasPrefix(parts[0]), text.hasSuffix(parts[parts.count - 1]),
              text.count >= parts[0].count + parts[parts.count - 1].count else { return false }
        var rest = text.dropFirst(parts[0].count).dropLast(parts[parts.count - 1].count)
        for part in parts.dropFirst().dropLast() where !part.isEmpty {
            guard let found = rest.range(of: part) else { return false }
            rest = rest[found.upperBound...]
        }
        return true
    }

    /// The first group of every match of `pattern` in `text`.
    static func matches(_ pattern: String, in text: String) -> [String] {
        let expression = try! NSRegularExpression(pattern: pattern)
        return expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } }
    }

    static func swiftFiles(under directory: String) throws -> [(path: String, text: String)] { try textFiles(under: directory) { $0.hasSuffix(".swift") } }

    /// Every file under `directory` that `keep` keeps and that is UTF-8 text, by its path below `directory`.
    static func textFiles(under directory: String, _ keep: (String) -> Bool = { _ in true }) throws -> [(path: String, text: String)] {
        let enumerator = FileManager.default.enumerator(atPath: directory)
        var texts: [(path: String, text: String)] = []
        while let path = enumerator?.nextObject() as? String {
            guard keep(path), let text = try? String(contentsOfFile: directory + "/" + path, encoding: .utf8) else { continue }
            texts.append((path, text))
        }
        return texts
    }

    /// The single-line string literals of Swift source (raw ones too; multi-line ones are skipped), escapes
    /// decoded, each interpolation as U+0000, literals joined by `+` as one, each with the byte offset where it
    /// starts (its first `#` or quote). Comments are skipped.
    static func stringLiterals(_ source: [UInt8]) -> [(offset: Int, text: String)] {
        let quote = UInt8(ascii: "\""), hash = UInt8(ascii: "#"), slash = UInt8(ascii: "/"), backslash = UInt8(ascii: "\\")
        var literals: [(offset: Int, text: String)] = []
        var i = 0
        /// Whether `count` #s stand at `at`.
        func hashRun(_ count: Int, at: Int) -> Bool { at + count <= source.count && source[at..<(at + count)].allSatisfy { $0 == hash } }
        /// Reads the literal whose first quote is at `i` (after `hashes` #s); returns its text, or nil for a multi-line one.
        func literal(hashes: Int) -> [UInt8]? {
            if i + 2 < source.count && source[i + 1] == quote && source[i + 2] == quote {
                i += 3
                let close = [quote, quote, quote] + Array(repeating: hash, count: hashes)
                while i < source.count && !source[i...].starts(with: close) { i += 1 }
                i += close.count
                return nil
            }
            i += 1
            var text: [UInt8] = []
            while i < source.count {
                let byte = source[i]
                if byte == quote && hashRun(hashes, at: i + 1) {
                    i += 1 + hashes
                    return text
                }
                if byte == UInt8(ascii: "\n") { return text }  // not a literal after all; stop at the line's end
                if byte == backslash && hashRun(hashes, at: i + 1) && i + 1 + hashes < source.count {
                    let escaped = source[i + 1 + hashes]
                    i += 2 + hashes
                    switch escaped {
                    case UInt8(ascii: "("):
                        var depth = 1
                        while i < source.count && depth > 0 {
                            if source[i] == quote { _ = literal(hashes: 0); continue }
                            if source[i] == UInt8(ascii: "(") { depth += 1 } else if source[i] == UInt8(ascii: ")") { depth -= 1 }
                            i += 1
                        }
                        text.append(0)
                    case UInt8(ascii: "n"): text.append(UInt8(ascii: "\n"))
                    case UInt8(ascii: "t"): text.append(UInt8(ascii: "\t"))
                    case UInt8(ascii: "u"):
                        while i < source.count && source[i] != UInt8(ascii: "}") { i += 1 }
                        i += 1
                        text.append(UInt8(ascii: "?"))
                    default: text.append(escaped)
                    }
                    continue
                }
                text.append(byte)
                i += 1
            }
            return text
        }
        while i < source.count {
            let byte = source[i]
            if byte == slash && i + 1 < source.count && source[i + 1] == slash {
                while i < source.count && source[i] != UInt8(ascii: "\n") { i += 1 }
            } else if byte == slash && i + 1 < source.count && source[i + 1] == UInt8(ascii: "*") {
                i += 2
                while i + 1 < source.count && !(source[i] == UInt8(ascii: "*") && source[i + 1] == slash) { i += 1 }
                i += 2
            } else if byte == quote || byte == hash {
                let start = i
                var count = 0
                while i + count < source.count && source[i + count] == hash { count += 1 }
                var before = i - 1
                while before >= 0 && [UInt8(ascii: " "), UInt8(ascii: "\n")].contains(source[before]) { before -= 1 }
                i += count
                guard i < source.count && source[i] == quote else { continue }
                guard var text = literal(hashes: count) else { continue }
                // `"a" + "b"` (over lines too) is one text; `x + "a" + y` is "\0a\0".
                if before >= 0 && source[before] == UInt8(ascii: "+") { text.insert(0, at: 0) }
                while true {
                    var j = i
                    while j < source.count && [UInt8(ascii: " "), UInt8(ascii: "\n")].contains(source[j]) { j += 1 }
                    guard j < source.count && source[j] == UInt8(ascii: "+") else { break }
                    j += 1
                    while j < source.count && [UInt8(ascii: " "), UInt8(ascii: "\n")].contains(source[j]) { j += 1 }
                    guard j < source.count && source[j] == quote, !(j + 2 < source.count && source[j + 1] == quote && source[j + 2] == quote) else {
                        text.append(0)
                        break
                    }
                    i = j
                    text += literal(hashes: 0) ?? []
                }
                literals.append((start, String(decoding: text, as: UTF8.self)))
            } else {
                i += 1
            }
        }
        return literals
    }
}
