import Foundation
import PushCore
import Testing
import WebPush
@testable import Worker

/// The provider seam: code outside the registry and the providers does not branch on the platform, so a new
/// provider is its module and one line in `ProviderRegistry`, not edits across the worker (docs/adding-a-provider.md).
@Suite struct ProviderSeamTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The names code writes a platform with: its raw value (`"hms"`) and its case name (`.hms`), from `allCases`,
    /// so a new provider is grepped for without an edit here.
    static func names(_ platform: Platform) -> String { Set([platform.rawValue, "\(platform)"]).sorted().joined(separator: "|") }

    /// The shapes that name one of `names` (an alternation) to act on it: a comparison (`== .fcm`, `!= "apns"`), a
    /// pattern (`case .apns`, a string switch's `case "hms"`), a ternary's pick (`? .apns :`), a dictionary key
    /// (`"hms":`, a line's leading `.hms:`), a literal argument or element (`(platform: .fcm)`, `["webpush"`).
    static func shapes(_ names: String) -> String {
        #"(==|!=) *\.(N)\b|(==|!=) *"(N)"|case +(let +)?\.(N)\b|case +"(N)"|\? *\.(N) *:|"(N)" *:|^ *\.(N) *:|[(,\[] *(\w+ *: *)?"(N)"|[(,\[] *(\w+ *: *)?\.(N)\b"#
            .replacingOccurrences(of: "N", with: names)
    }

    /// One pattern per platform, so a line's finding says which platforms it names.
    static let branches = Platform.allCases.map { ($0, try! NSRegularExpression(pattern: shapes(names($0)))) }
    /// A match on a provider's own case of an answer (`case .response`): provider code whatever it names.
    static let answerMatch = try! NSRegularExpression(pattern: #"case +\.response\b"#)

    /// Where branching on the platform is the point: the providers' modules (senders included), their worker sides
    /// (`Worker/Providers/`), the platforms' declaration and the registry.
    static let providerPlaces = [
        "Sources/Providers/", "Sources/Delivery/Worker/Providers/", "Sources/Delivery/Worker/Delivery/ProviderRegistry.swift",
        "Sources/Core/PushCore/Platform.swift",
    ]

    /// Code outside those places that may name these platforms, each for its reason; anything else it names fails.
    struct Allowance {
        let place: String
        let platforms: Set<Platform>
        let why: String
    }

    static let allowances = [
        Allowance(place: "Sources/Simulators/FCM/", platforms: [.fcm],
                  why: "the FCM simulator names its own provider (its errors are FCM's)"),
        Allowance(place: "Sources/Simulators/FCM/FCMMessageRules.swift", platforms: [.apns, .webpush],
                  why: "FCM v1's message has `apns` and `webpush` override blocks: FCM's field names, not platforms"),
        Allowance(place: "Sources/Tools/herald/Send", platforms: Set(Platform.allCases),
                  why: "`herald send` is each provider's one-off sender (its own flags and credential), picked by one exhaustive switch"),
        Allowance(place: "Sources/Tools/herald/DemoCommand.swift", platforms: Set(Platform.allCases),
                  why: "`herald demo` starts every provider's simulator and writes each one's settings block"),
        Allowance(place: "Sources/Tools/HeraldBench/BenchJobs.swift", platforms: Set(Platform.allCases),
                  why: "the bench writes each provider's own job shape, in one exhaustive switch"),
        Allowance(place: "Sources/Tools/HeraldBench/FCMSendBenchCommand.swift", platforms: [.fcm],
                  why: "the FCM sender's own benchmark"),
    ]

    /// A line of code that names platforms (or matches an answer's case).
    struct Finding {
        let file: String
        let line: String
        let platforms: Set<Platform>
        let answerCase: Bool
    }

    static func findings() throws -> [Finding] {
        let sources = Self.root.appendingPathComponent("Sources")
        let enumerator = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var found: [Finding] = []
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let relative = String(url.path.dropFirst(Self.root.path.count + 1))
            let text = try String(contentsOf: url, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = String(line)
                if code.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
                if let named = Self.named(in: code) {
                    found.append(Finding(file: relative, line: "\(number + 1): \(code)", platforms: named.platforms, answerCase: named.answerCase))
                }
            }
        }
        return found
    }

    /// What one line names; nil when nothing.
    static func named(in code: String) -> (platforms: Set<Platform>, answerCase: Bool)? {
        let range = NSRange(code.startIndex..., in: code)
        let platforms = Set(Self.branches.filter { $0.1.firstMatch(in: code, range: range) != nil }.map(\.0))
        let answerCase = Self.answerMatch.firstMatch(in: code, range: range) != nil
        return platforms.isEmpty && !answerCase ? nil : (platforms, answerCase)
    }

    @Test func noBranchOnThePlatformOutsideTheRegistryAndTheProviders() throws {
        let found = try Self.findings()
        #expect(found.contains { $0.file == "Sources/Delivery/Worker/Delivery/ProviderRegistry.swift" }, "the registry's own switch was not seen: is \(Self.root.path) the repository?")
        let outside = found.filter { finding in !Self.providerPlaces.contains(where: finding.file.hasPrefix) }
        for (file, lines) in Dictionary(grouping: outside, by: \.file).sorted(by: { $0.key < $1.key }) {
            let allowed = Self.allowances.filter { file.hasPrefix($0.place) }.reduce(into: Set<Platform>()) { $0.formUnion($1.platforms) }
            let wrong = lines.filter { $0.answerCase || !$0.platforms.isSubset(of: allowed) }
            if wrong.isEmpty { continue }
            Issue.record("\(file) names a platform \(wrong.count) times: ask the platform (`Platform`'s table) or the registry instead\n\(wrong.map(\.line).joined(separator: "\n"))")
        }
    }

    /// An allowance nothing needs any more is removed, so the list stays the code's.
    @Test func everyAllowanceIsStillNeeded() throws {
        let found = try Self.findings()
        for allowance in Self.allowances {
            let used = found.contains { $0.file.hasPrefix(allowance.place) && !$0.platforms.isDisjoint(with: allowance.platforms) }
            #expect(used, "nothing under \(allowance.place) names \(allowance.platforms.map(\.rawValue).sorted()): remove the allowance")
        }
    }

    /// Every shape is caught for every platform, each line naming the platform it writes and no other, and the
    /// lookalikes that name none (a member of that name, a word in prose) are not.
    @Test func theSeamsPatternCatchesEveryShapeForEveryPlatform() {
        for platform in Platform.allCases {
            let raw = platform.rawValue, name = "\(platform)"
            let shapes = [
                "if p == .\(name) {", "x != \"\(raw)\"", "case .\(name): return 1", "case let .\(name)(x):", "case \"\(raw)\"?: run()",
                "p ? .\(name) : other", "[\"\(raw)\": 1]", "    .\(name): \"x\",", "f(platform: .\(name))", "Platform(rawValue: \"\(raw)\")",
                "g(a, .\(name))", "[\"\(raw)\"]",
            ]
            for line in shapes { #expect(Self.named(in: line)?.platforms == [platform], "\(line)") }
            for line in ["configuration.\(name).url", "app.\(name)?.appID", "let \(name) = 1", "the \(raw) sender", "x.\(name): 1"] {
                #expect(Self.named(in: line) == nil, "\(line)")
            }
        }
    }

    /// The delivery core (`Worker/Delivery/`) knows no provider: what it needs of one it asks the registry's
    /// `PushProvider` (environment fallback among it), so no file there imports a provider's module.
    @Test func noDeliveryCoreFileImportsAProviderModule() throws {
        // Found by its DeliveryCore.swift, wherever the folder sits under Sources.
        let enumerator = try #require(FileManager.default.enumerator(at: Self.root.appendingPathComponent("Sources"), includingPropertiesForKeys: nil))
        let core = try #require(enumerator.compactMap { $0 as? URL }.first { $0.lastPathComponent == "DeliveryCore.swift" }, "no DeliveryCore.swift under Sources")
        let directory = core.deletingLastPathComponent()
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
        #expect(files.count > 5, "\(directory.path): \(files)")
        let providers: Set<String> = ["APNs", "FCM", "WebPush", "HMS"]
        for file in files.sorted() {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            let imported = text.split(separator: "\n").compactMap { line -> String? in
                let words = line.split(separator: " ")
                guard let at = words.firstIndex(of: "import"), at + 1 < words.count else { return nil }
                return words[..<at].allSatisfy { $0.hasPrefix("@") || ["public", "internal", "package"].contains($0) } ? String(words[at + 1]) : nil
            }
            #expect(providers.isDisjoint(with: imported), "\(file) imports \(imported.filter(providers.contains))")
        }
    }

    /// The registry finds each platform's sender at its `slot`, in `allCases` order.
    @Test func eachPlatformsSlotIsItsIndexAmongAllCases() {
        for (index, platform) in Platform.allCases.enumerated() { #expect(platform.slot == index, "\(platform)") }
    }

    /// An app is its credential's provider's, and only that provider's sender is handed it.
    @Test func anAppBelongsToTheProviderWhoseCredentialItNames() {
        let apns = Configuration.AppSettings(name: "shop", bundleID: "com.example.shop",
                                             token: .init(teamID: "T", keyID: "K", keyFile: "/k.p8"))
        let fcm = Configuration.AppSettings(name: "android", bundleID: "", fcm: .init(serviceAccountFile: "/sa.json"))
        var web = Configuration.AppSettings(name: "web", bundleID: "")
        web.webpush = .init(vapidKey: "k", subject: "mailto:ops@example.com")
        var huawei = Configuration.AppSettings(name: "huawei", bundleID: "")
        huawei.hms = .init(appID: "10086", clientSecretFile: "/secret")
        let bare = Configuration.AppSettings(name: "bare", bundleID: "com.example.bare")
        #expect([apns, fcm, web, huawei, bare].map(\.platform) == [Platform.apns, .fcm, .webpush, .hms, .apns])
        let owners: [Platform: String] = [.apns: "shop", .fcm: "android", .webpush: "web", .hms: "huawei"]
        for platform in Platform.allCases {
            let owned = [apns, fcm, web, huawei].filter { ProviderRegistry.provider(for: platform).owns($0) }.map(\.name)
            #expect(owned == owners[platform].map { [$0] }, "\(platform)")
        }
        let loaded = [AppCredentials(app: apns, credential: 1), AppCredentials(app: fcm, credential: "account")]
        let apps: [ProviderApp<String, String>] = FCMProvider.apps(loaded) { $0.fcm?.serviceAccountFile }
        #expect(apps.map(\.index) == [1] && apps.first?.auth == "/sa.json" && apps.first?.credential == "account")
    }
}
