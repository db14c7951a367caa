/// Push Kit v3's scenarios, each its `push-type` header number (Huawei's "Pushing Scenario-Specific Messages"):
/// 0 alert (notification or badge), 1 widget (card) update, 2 text-to-speech (notification extension), 6 background,
/// 7 live view, 10 in-app call. A job names one by its word or its number.
public enum HarmonyPushType: Int, Sendable, CaseIterable {
    case alert = 0, widget = 1, textToSpeech = 2, background = 6, liveView = 7, call = 10

    /// Its word in a job (`"push_type": "live_view"`).
    public var word: String {
        switch self {
        case .alert: "alert"
        case .widget: "widget"
        case .textToSpeech: "text_to_speech"
        case .background: "background"
        case .liveView: "live_view"
        case .call: "call"
        }
    }

    public init?(word: String) {
        guard let type = Self.allCases.first(where: { $0.word == word }) else { return nil }
        self = type
    }

    /// The `push-type` header's value.
    public var header: String { String(rawValue) }
}
