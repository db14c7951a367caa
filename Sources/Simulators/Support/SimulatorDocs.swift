import Foundation
import Basics

/// The flags tables of docs/mock-*.md, made from the commands' declared settings (the same words as their
/// `--help`), so a page cannot disagree with its command (`SimulatorDocsTests` compares them and can rewrite them).
enum SimulatorDocs {
    /// Each simulator's page, from the repository's root, and its command.
    static var pages: [(page: String, spec: CommandSpec)] {
        [("docs/mock-apns.md", MockAPNsOptions.spec), ("docs/mock-fcm.md", MockFCMOptions.spec),
         ("docs/mock-hms.md", MockHMSOptions.spec), ("docs/mock-webpush.md", MockWebPushOptions.spec),
         ("docs/mock-harmony.md", MockHarmonyOptions.spec),
         ("docs/mock-expo.md", MockExpoOptions.spec)]
    }

    static let open = "<!-- flags: generated from the command's settings -->\n"
    static let close = "<!-- /flags -->"

    /// `text` with its block between `open` and `close` replaced by the command's table; nil when a marker is missing.
    static func page(updating text: String, spec: CommandSpec) -> String? {
        guard let start = text.range(of: open), let end = text.range(of: close, range: start.upperBound..<text.endIndex) else { return nil }
        var text = text
        text.replaceSubrange(start.upperBound..<end.lowerBound, with: spec.optionTable + "\n")
        return text
    }
}
