import FCM
import Foundation
import HeraldProviders
import PushCore
import Testing
import WebPush
@testable import Worker

/// The provider seam: code outside the providers does not branch on the platform, and the worker and the API link
/// no provider, so a new provider is its module and one line in `heraldProviders`, not edits across the worker
/// (docs/adding-a-provider.md).
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

    /// Where branching on the platform is the point: the providers' modules (senders and `PushProvider`s included)
    /// and the platforms' declaration.
    static let providerPlaces = ["Sources/Providers/", "Sources/Core/PushCore/Platform.swift"]

    /// Code outside those places that may name these platforms, each for its reason; anything else it names fails.
    struct Allowance {
        let place: String
        let platforms: Set<Platform>
        let why: String
    }

    static let allowances = [
        Allowance(place: "Sources/Simulators/FCM/FCMMessageRules.swift", platforms: [.apns, .webpush],
                  why: "FCM v1's message has `apns` and `webpush` override blocks: FCM's field names, not platforms"),
        Allowance(place: "Sources/FrontDoors/API/Gorush", platforms: Set(Platform.allCases),
                  why: "gorush's platforms 1, 2 and 3 are APNs, FCM and Push Kit: its mapping writes each one's job shape (as `herald send` and the bench do), and its request's `apns` and `webpush` members are Firebase's override blocks, field names, not platforms"),
        Allowance(place: "Sources/FrontDoors/API/FrontDoor+GorushStat.swift", platforms: Set(Platform.allCases),
                  why: "gorush's stat answer and metric families have a section per platform (`ios`, `android`, `huawei`): Herald's platforms named once, in that table"),
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
        #expect(found.contains { $0.file.hasPrefix("Sources/Providers/") }, "the providers' own branches were not seen: is \(Self.root.path) the repository?")
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

    /// Package.swift's targets: each one's folder (`path:`) and its declared dependencies.
    static func targets() throws -> [String: (path: String, dependencies: Set<String>)] {
        let package = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let target = try NSRegularExpression(pattern: #"\.(?:target|executableTarget)\(\s*name: "(\w+)"(?:, dependencies: \[([^\]]*)\])?[^\n]*?path: "([^"]+)""#)
        var found: [String: (path: String, dependencies: Set<String>)] = [:]
        for match in target.matches(in: package, range: NSRange(package.startIndex..., in: package)) {
            let text = { (i: Int) in Range(match.range(at: i), in: package).map { String(package[$0]) } ?? "" }
            let dependencies = text(2).split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " \"")) }
            found[text(1)] = (text(3), Set(dependencies.filter { !$0.isEmpty }))
        }
        return found
    }

    /// The worker and the API know no provider: what they need of one they ask the configuration's `PushProvider`s
    /// (the composition root's list), so neither depends on a provider module in Package.swift, and no file of
    /// theirs imports one.
    @Test func noWorkerOrAPIFileImportsAProviderModule() throws {
        let targets = try Self.targets()
        let providers = Set(targets.filter { $0.value.path.hasPrefix("Sources/Providers/") }.keys)
        // A module per platform under Sources/Providers/: Package.swift was read, and its folders are the providers'.
        #expect(providers.count == Platform.allCases.count, "Package.swift's provider targets: \(providers.sorted())")
        for name in ["Worker", "API"] {
            let target = try #require(targets[name], "no target \(name) in Package.swift")
            #expect(providers.isDisjoint(with: target.dependencies), "\(name) depends on \(target.dependencies.intersection(providers).sorted())")
            let folder = Self.root.appendingPathComponent(target.path)
            let enumerator = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
            let files = enumerator.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
            #expect(files.count > 5, "\(folder.path): \(files.count) files")
            for file in files.sorted(by: { $0.path < $1.path }) {
                let text = try String(contentsOf: file, encoding: .utf8)
                let imported = text.split(separator: "\n").compactMap { line -> String? in
                    let words = line.split(separator: " ")
                    guard let at = words.firstIndex(of: "import"), at + 1 < words.count else { return nil }
                    return words[..<at].allSatisfy { $0.hasPrefix("@") || ["public", "internal", "package"].contains($0) } ? String(words[at + 1]) : nil
                }
                #expect(providers.isDisjoint(with: imported), "\(file.path) imports \(imported.filter(providers.contains))")
            }
        }
    }

    /// The configuration's providers are found at each platform's `slot`, in `allCases` order.
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
        // A provider added since owns none of these apps (so it needs no line here, docs/adding-a-provider.md).
        for platform in Platform.allCases {
            let owned = [apns, fcm, web, huawei].filter { heraldProviders.provider(for: platform).owns($0) }.map(\.name)
            #expect(owned == (owners[platform].map { [$0] } ?? []), "\(platform)")
        }
        let loaded = [AppCredentials(app: apns, credential: 1), AppCredentials(app: fcm, credential: "account")]
        let apps: [ProviderApp<String, String>] = FCMProvider.apps(loaded) { $0.fcm?.serviceAccountFile }
        #expect(apps.map(\.index) == [1] && apps.first?.auth == "/sa.json" && apps.first?.credential == "account")
    }
}
