import Foundation
import PushCore
import Testing

/// The provider seam: code outside the registry and the providers does not branch on the platform, so a new
/// provider is its module and one line in `ProviderRegistry`, not edits across the worker (docs/adding-a-provider.md).
@Suite struct ProviderSeamTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A comparison with a platform (`== .fcm`, `!= "apns"`), a `case .apns`/`.fcm` pattern, a ternary picking a
    /// platform, or a match on a provider's own case of an answer (`case .response`).
    static let branch = try! NSRegularExpression(
        pattern: #"(==|!=) *\.(apns|fcm)\b|(==|!=) *"(apns|fcm)"|case \.(apns|fcm|response)\b|\? *\.(apns|fcm) *:"#)

    /// Where branching on the platform is the point: the providers' modules (senders included), their simulators,
    /// the platforms' declaration and the registry.
    static let providerPlaces = [
        "Sources/APNs/", "Sources/FCM/", "Sources/MockAPNs/", "Sources/Worker/Delivery/ProviderRegistry.swift", "Sources/PushCore/Platform.swift",
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
}
