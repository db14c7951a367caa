import Foundation
import HeraldTestSupport
import Testing

/// deploy/prometheus/herald-rules.yml as Prometheus reads it: promtool checks the rules and runs their unit tests
/// (herald-rules.test.yml), and every rule is complete: a severity, a summary, a description, a runbook section that
/// exists, metrics that docs/observability.md documents, and a test case where it fires and one where it stays quiet.
@Suite struct AlertRulesTests {
    static let rules = "deploy/prometheus/herald-rules.yml"
    static let ruleTests = "deploy/prometheus/herald-rules.test.yml"

    @Test func promtoolAcceptsTheRulesAndEveryUnitTestPasses() throws {
        let promtool = try #require(which("promtool"), "Debian's prometheus (promtool) is not installed (run scripts/setup)")
        let check = try DeployFiles.run(promtool, ["check", "rules", DeployFiles.path(Self.rules)])
        #expect(check.status == 0, "promtool check rules: \(check.text)")
        let test = try DeployFiles.run(promtool, ["test", "rules", DeployFiles.path(Self.ruleTests)])
        #expect(test.status == 0, "promtool test rules: \(test.text)")
        #expect(test.text.contains("SUCCESS"), "promtool test rules: \(test.text)")
    }

    @Test func everyRuleHasASeveritySummaryDescriptionAndARunbookSectionThatExists() throws {
        let runbook = try String(contentsOfFile: DeployFiles.path("docs/alerts.md"), encoding: .utf8)
        let anchors = Set(runbook.split(separator: "\n").filter { $0.hasPrefix("## ") }.map { githubAnchor(String($0.dropFirst(3))) })
        let alerts = try Self.alertRules()
        #expect(alerts.count >= 14)
        for rule in alerts {
            let name = try #require(rule["alert"] as? String)
            let labels = rule["labels"] as? [String: Any] ?? [:]
            #expect(["critical", "warning", "info"].contains(labels["severity"] as? String ?? ""), "\(name): severity")
            let annotations = rule["annotations"] as? [String: Any] ?? [:]
            #expect(!(annotations["summary"] as? String ?? "").isEmpty, "\(name): summary")
            #expect(!(annotations["description"] as? String ?? "").isEmpty, "\(name): description")
            let link = annotations["runbook_url"] as? String ?? ""
            #expect(link == "docs/alerts.md#" + name.lowercased(), "\(name): runbook_url \(link)")
            #expect(anchors.contains(name.lowercased()), "\(name): no section '## \(name)' in docs/alerts.md")
        }
        // Issue 52: the table at the top listed 14 of 16 rules. It lists each rule once, with its severity.
        let rows = runbook.split(separator: "\n").filter { $0.hasPrefix("| [Herald") }.map { line in
            line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let tabled = rows.map { $0[0].dropFirst().prefix { $0 != "]" } }.map(String.init)
        #expect(tabled.sorted() == alerts.compactMap { $0["alert"] as? String }.sorted(), "docs/alerts.md's table: \(tabled)")
        for (row, name) in zip(rows, tabled) {
            let severity = (alerts.first { $0["alert"] as? String == name }?["labels"] as? [String: Any])?["severity"] as? String
            #expect(row.count > 1 && row[1] == severity, "\(name): the table says \(row.count > 1 ? row[1] : "nothing"), the rule \(severity ?? "none")")
        }
    }

    @Test func everyMetricARuleReadsIsDocumented() throws {
        // The worker's and dashboard's families are in docs/observability.md, `herald api`'s in docs/api.md.
        let documented = try ["docs/observability.md", "docs/api.md"].map { try String(contentsOfFile: DeployFiles.path($0), encoding: .utf8) }
            .joined(separator: "\n")
        for rule in try Self.alertRules() {
            let name = rule["alert"] as? String ?? "?"
            let expression = rule["expr"] as? String ?? ""
            for metric in Self.metricNames(in: expression) {
                #expect(documented.contains("`\(metric)`"), "\(name) reads \(metric), which neither docs/observability.md nor docs/api.md lists")
            }
        }
    }

    @Test func everyAlertHasATestWhereItFiresAndOneWhereItStaysQuiet() throws {
        let tests = try #require(try DeployFiles.yamlObject(Self.ruleTests)["tests"] as? [[String: Any]])
        var fires = Set<String>(), quiet = Set<String>()
        for test in tests {
            for case let check as [String: Any] in test["alert_rule_test"] as? [Any] ?? [] {
                let name = check["alertname"] as? String ?? ""
                if (check["exp_alerts"] as? [Any] ?? []).isEmpty { quiet.insert(name) } else { fires.insert(name) }
            }
        }
        for rule in try Self.alertRules() {
            let name = rule["alert"] as? String ?? "?"
            #expect(fires.contains(name), "\(name) is never shown firing in \(Self.ruleTests)")
            #expect(quiet.contains(name), "\(name) is never shown quiet in \(Self.ruleTests)")
        }
    }

    static func alertRules() throws -> [[String: Any]] {
        let groups = try #require(try DeployFiles.yamlObject(rules)["groups"] as? [[String: Any]])
        return groups.flatMap { ($0["rules"] as? [[String: Any]] ?? []).filter { $0["alert"] != nil } }
    }

    /// The `herald_*` metric names an expression reads, without histogram suffixes.
    static func metricNames(in expression: String) -> Set<String> {
        var names = Set<String>()
        var current = ""
        for character in expression + " " {
            if character.isLetter || character.isNumber || character == "_" { current.append(character); continue }
            // A histogram's series (`_bucket`, `_sum`, `_count`) are documented under the family's name.
            if current.hasPrefix("herald_") {
                names.insert(["_bucket", "_sum", "_count"].first { current.hasSuffix($0) }.map { String(current.dropLast($0.count)) } ?? current)
            }
            current = ""
        }
        return names
    }
}

/// The anchor GitHub gives a Markdown heading: lower case, spaces to hyphens, other punctuation dropped.
private func githubAnchor(_ heading: String) -> String {
    String(heading.lowercased().compactMap { $0 == " " ? "-" : ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : nil })
}
