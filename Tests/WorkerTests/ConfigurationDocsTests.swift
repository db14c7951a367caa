import Foundation
import HeraldProviders
import Testing
import Worker

/// docs/configuration.md's settings tables are the declarations': a setting added, renamed, re-bounded or
/// re-explained in `Configuration.settings` fails here until the docs say the same.
/// `HERALD_UPDATE_DOCS=1 swift test --filter ConfigurationDocsTests` rewrites the tables.
@Suite struct ConfigurationDocsTests {
    static let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/configuration.md").standardized

    @Test func theSettingsTablesInTheDocsAreTheDeclarations() throws {
        let text = try String(contentsOf: Self.docs, encoding: .utf8)
        let (generated, missing) = Configuration.documentation(updating: text)
        #expect(missing.isEmpty, "docs/configuration.md lacks the markers of \(missing)")
        if generated != text, ProcessInfo.processInfo.environment["HERALD_UPDATE_DOCS"] == "1" {
            try generated.write(to: Self.docs, atomically: true, encoding: .utf8)
            return
        }
        let old = text.split(separator: "\n", omittingEmptySubsequences: false)
        let new = generated.split(separator: "\n", omittingEmptySubsequences: false)
        let differing = zip(old, new).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(generated == text, """
            docs/configuration.md disagrees with Configuration.settings (run with HERALD_UPDATE_DOCS=1 to rewrite it); \
            first difference at line \(differing.map { $0.offset + 1 } ?? min(old.count, new.count)):
            docs:     \(differing?.element.0 ?? "")
            declared: \(differing?.element.1 ?? "")
            """)
    }

    @Test func everyFieldOfTheSectionsIsDeclared() {
        let declared = Set(Configuration.settings.map(\.key))
        let sections: [(String, Any)] = [("redis", Configuration.RedisSettings()), ("redis.tls", Configuration.RedisTLSSettings()),
                                         ("apns", Configuration.APNsSettings()), ("fcm", Configuration.FCMSettings.fcm),
                                         ("worker", Configuration.WorkerSettings()), ("results", Configuration.ResultsSettings()), ("budgets", Configuration.BudgetSettings()), ("metrics", Configuration.MetricsSettings()),
                                         ("registry", Configuration.RegistrySettings())]
        for (section, value) in sections {
            for case let (label?, child) in Mirror(reflecting: value).children where !(child is Configuration.RedisTLSSettings) {
                let key = section + "." + Self.snakeCase(label)
                #expect(declared.contains(key), "\(section) has a field \(label) with no declaration (\(key))")
            }
        }
    }

    /// `connectTimeoutMs` -> `connect_timeout_ms`, `productionURL` -> `production_url`.
    static func snakeCase(_ name: String) -> String {
        var out = ""
        let characters = Array(name)
        for (index, character) in characters.enumerated() {
            let previousLower = index > 0 && characters[index - 1].isLowercase
            let nextLower = index + 1 < characters.count && characters[index + 1].isLowercase
            if character.isUppercase && index > 0 && (previousLower || nextLower) { out += "_" }
            out += character.lowercased()
        }
        return out
    }
}
