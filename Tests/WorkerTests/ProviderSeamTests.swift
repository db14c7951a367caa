import Foundation
import PushCore
import Testing
import WebPush
@testable import Worker

/// The provider seam: code outside the registry and the providers does not branch on the platform, so a new
/// provider is its module and one line in `ProviderRegistry`, not edits across the worker (docs/adding-a-provider.md).
@Suite struct ProviderSeamTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A comparison with a platform (`== .fcm`, `!= "apns"`), a `case .apns`/`.fcm` pattern, a ternary picking a
    /// platform, or a match on a provider's own case of an answer (`case .response`).
    static let branch = try! NSRegularExpression(
        pattern: #"(==|!=) *\.(apns|fcm|webpush|hms)\b|(==|!=) *"(apns|fcm|webpush|hms)"|case \.(apns|fcm|webpush|hms|response)\b|\? *\.(apns|fcm|webpush|hms) *:"#)

    /// Where branching on the platform is the point: the providers' modules (senders included), their worker sides
    /// (`Worker/Providers/`), their simulators, the platforms' declaration and the registry.
    static let providerPlaces = [
        "Sources/APNs/", "Sources/FCM/", "Sources/WebPush/", "Sources/Huawei/", "Sources/Simulators/", "Sources/Worker/Providers/", "Sources/Worker/Delivery/ProviderRegistry.swift",
        "Sources/PushCore/Platform.swift",
    ]

    static func platformBranches() throws -> [String: [String]] {
        let sources = Self.root.appendingPathComponent("Sources")
        let enumerator = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var found: [String: [String]] = [:]
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let relative = String(url.path.dropFirst(Self.root.path.count + 1))
            let text = try String(contentsOf: url, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = String(line)
                if code.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
                let range = NSRange(code.startIndex..., in: code)
                if Self.branch.firstMatch(in: code, range: range) != nil { found[relative, default: []].append("\(number + 1): \(code)") }
            }
        }
        return found
    }

    @Test func noBranchOnThePlatformOutsideTheRegistryAndTheProviders() throws {
        let found = try Self.platformBranches()
        #expect(!found.isEmpty, "the grep found no branch at all, not even the registry's: is \(Self.root.path) the repository?")
        #expect(found["Sources/Worker/Delivery/ProviderRegistry.swift"] != nil, "the registry's own switch was not seen: the pattern is broken")
        for (file, lines) in found.sorted(by: { $0.key < $1.key }) where !Self.providerPlaces.contains(where: file.hasPrefix) {
            Issue.record("\(file) branches on the platform \(lines.count) times: ask the platform (`Platform`'s table) or the registry instead\n\(lines.joined(separator: "\n"))")
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
