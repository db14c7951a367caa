import Basics
import Testing

/// Issue 52: a mistyped command, option or configuration key is answered with the one it most likely meant.
@Suite struct SuggestionTests {
    @Test func theClosestKnownWordIsSuggestedAndNothingFarOff() {
        let commands = ["worker", "scheduler", "enqueue", "api", "send", "stats", "mock-apns", "mock-fcm", "check-config"]
        #expect(Suggestion.closest(to: "wroker", among: commands) == "worker", "a swap of neighbours")
        #expect(Suggestion.closest(to: "workr", among: commands) == "worker")
        #expect(Suggestion.closest(to: "Stats", among: commands) == "stats")
        #expect(Suggestion.closest(to: "mock-fmc", among: commands) == "mock-fcm")
        #expect(Suggestion.closest(to: "checkconfig", among: commands) == "check-config")
        #expect(Suggestion.closest(to: "foo", among: commands) == nil)
        #expect(Suggestion.closest(to: "", among: commands) == nil)
        #expect(Suggestion.closest(to: "deploy", among: commands) == nil)
        #expect(Suggestion.text("unknown setting 'redis.ulr'", word: "ulr", among: ["url", "prefix"], prefix: "redis.")
                == "unknown setting 'redis.ulr'; did you mean 'redis.url'?")
    }

    @Test func anUnknownOptionNamesTheOneItMostLikelyMeant() {
        let spec = CommandSpec(usageName: "t", abstract: "", options: [.value("config", "FILE", "")])
        #expect(throws: UsageError("unknown option '--cofnig'; did you mean '--config'?")) { try ParsedArguments.parse(["--cofnig", "x"], spec: spec) }
        #expect(throws: UsageError("unknown option '--nope'")) { try ParsedArguments.parse(["--nope"], spec: spec) }
    }
}
