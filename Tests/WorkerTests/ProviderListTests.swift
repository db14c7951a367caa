import Foundation
import HeraldProviders
import PushCore
import Testing

/// The docs' lists of providers, checked against `Platform.allCases` and Package.swift: written by hand, they went
/// stale when a provider was added and no test saw it.
@Suite struct ProviderListTests {
    /// A line of a doc that lists every platform, found by a phrase only it (or its twins) holds.
    struct Listing {
        let file: String
        let anchor: String
        let names: @Sendable (Platform) -> String
    }

    static let listings = [
        Listing(file: "docs/observability.md", anchor: "`platform` is ", names: { "`\($0.rawValue)`" }),
        Listing(file: "docs/results.md", anchor: "| `platform` | no |", names: { "`\($0.rawValue)`" }),
        Listing(file: "docs/job-format.md", anchor: "every other job is an APNs job", names: { "`\"\($0.rawValue)\"`" }),
        Listing(file: "README.md", anchor: "scripts/demo    #", names: { $0.displayName }),
    ]

    /// The composition root's list is the one list of providers: each `Platform` case's provider once, at its
    /// `slot` (intake finds a job's provider by that index).
    @Test func theProviderListHoldsEveryPlatformOnceInOrder() {
        #expect(heraldProviders.map { $0.platform } == Platform.allCases)
        for platform in Platform.allCases { #expect(heraldProviders.provider(for: platform).platform == platform, "\(platform)") }
    }

    @Test func everyDocumentedListOfPlatformsNamesEveryPlatform() throws {
        for listing in Self.listings {
            let text = try String(contentsOfFile: DeployFiles.path(listing.file), encoding: .utf8)
            let lines = text.split(separator: "\n").filter { $0.contains(listing.anchor) }
            #expect(!lines.isEmpty, "\(listing.file) has no line with \(listing.anchor)")
            for line in lines {
                let missing = Platform.allCases.filter { !line.contains(listing.names($0)) }
                #expect(missing.isEmpty, "\(listing.file) lists no \(missing.map(listing.names)): \(line)")
            }
        }
    }

    /// docs/architecture.md's module table names each module's dependencies as Package.swift declares them (a
    /// provider module among them), `nothing` for none; `herald`'s "all" is not a list.
    @Test func theArchitectureTableListsEachModulesDependenciesAsPackageSwiftDeclares() throws {
        let package = try String(contentsOfFile: DeployFiles.path("Package.swift"), encoding: .utf8)
        let target = try NSRegularExpression(pattern: #"\.(?:target|executableTarget)\(\s*name: "(\w+)"(?:, dependencies: \[([^\]]*)\])?"#)
        var declared: [String: Set<String>] = [:]
        for match in target.matches(in: package, range: NSRange(package.startIndex..., in: package)) {
            let name = String(package[Range(match.range(at: 1), in: package)!])
            let list = Range(match.range(at: 2), in: package).map { String(package[$0]) } ?? ""
            declared[name] = Set(list.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " \"")) }.filter { !$0.isEmpty })
        }
        #expect(declared["Worker"]?.contains("ProviderKit") == true, "Package.swift was not read: \(declared.keys.sorted())")
        let doc = try String(contentsOfFile: DeployFiles.path("docs/architecture.md"), encoding: .utf8)
        var rows = 0
        for line in doc.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let name = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            guard let dependencies = declared[name], cells.last != "all" else { continue }
            rows += 1
            let listed = cells.last == "nothing" ? [] : Set(cells.last!.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(listed == dependencies, "\(name): the table says \(listed.sorted()), Package.swift \(dependencies.sorted())")
        }
        #expect(rows > 15, "only \(rows) rows of docs/architecture.md's table were read")
    }
}
