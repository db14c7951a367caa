import Basics
import Foundation
import Testing
@testable import Simulators

/// The simulators' flags are declared once (`Setting`s): their `--help`, their docs pages' tables and their
/// parsing come from the declarations, and a bad value is refused with the words every herald command uses.
/// `HERALD_UPDATE_DOCS=1 swift test --filter SimulatorFlagsTests` rewrites the docs' tables.
@Suite struct SimulatorFlagsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    @Test func theDocsTablesAreTheDeclarations() throws {
        for (page, spec) in SimulatorDocs.pages {
            let file = Self.root.appendingPathComponent(page)
            let text = try String(contentsOf: file, encoding: .utf8)
            let generated = try #require(SimulatorDocs.page(updating: text, spec: spec), "\(page) lacks the flags markers")
            if generated != text, ProcessInfo.processInfo.environment["HERALD_UPDATE_DOCS"] == "1" {
                try generated.write(to: file, atomically: true, encoding: .utf8)
                continue
            }
            let old = text.split(separator: "\n", omittingEmptySubsequences: false)
            let new = generated.split(separator: "\n", omittingEmptySubsequences: false)
            let differing = zip(old, new).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(generated == text, """
                \(page) disagrees with \(spec.usageName)'s settings (run with HERALD_UPDATE_DOCS=1 to rewrite it); \
                first difference at line \(differing.map { $0.offset + 1 } ?? min(old.count, new.count)):
                docs:     \(differing?.element.0 ?? "")
                declared: \(differing?.element.1 ?? "")
                """)
        }
    }

    /// `--help` lists every declared flag, in declaration order, with its declared words.
    @Test func helpListsTheDeclarations() {
        let declared: [(CommandSpec, [String])] = [
            (MockAPNsOptions.spec, MockAPNsOptions.settings.map(\.key)), (MockFCMOptions.spec, MockFCMOptions.settings.map(\.key)),
            (MockHMSOptions.spec, MockHMSOptions.settings.map(\.key)), (MockWebPushOptions.spec, MockWebPushOptions.settings.map(\.key)),
        ]
        for (spec, keys) in declared {
            #expect(spec.options.map(\.name) == keys)
            let help = spec.help
            var search = help.startIndex..<help.endIndex
            for option in spec.options {
                let found = help.range(of: "  --\(option.name)" + (option.valueName.map { " <\($0)>" } ?? ""), range: search)
                #expect(found != nil, "\(spec.usageName) --help lacks --\(option.name) (or lists it out of order)")
                if let found { search = found.upperBound..<help.endIndex }
                let firstWords = option.help.split(separator: " ").prefix(4).joined(separator: " ")
                #expect(help.contains(firstWords), "\(spec.usageName) --help lacks the words of --\(option.name)")
            }
        }
        #expect(MockAPNsOptions.spec.options.count == 32)
        #expect(MockFCMOptions.spec.options.count == 17)
        #expect(MockHMSOptions.spec.options.count == 14)
        #expect(MockWebPushOptions.spec.options.count == 13)
    }

    static func refusal(_ spec: CommandSpec, _ words: [String], _ parse: (ParsedArguments) throws(UsageError) -> Void) -> String? {
        do {
            try parse(try ParsedArguments.parse(words, spec: spec))
            return nil
        } catch {
            return error.description
        }
    }

    /// The words a bad value gets, as the simulators gave them before their flags were declared.
    @Test func badValuesAreRefusedWithTheSameWords() {
        let apns = { (words: [String]) in Self.refusal(MockAPNsOptions.spec, words) { args throws(UsageError) in _ = try MockAPNsOptions(args) } }
        #expect(apns(["--port", "99999"]) == "--port must be in 0...65535, got 99999")
        #expect(apns(["--port", "x"]) == "--port expects a whole number, got 'x'")
        #expect(apns(["--port"]) == "--port needs a value (<n>)")
        #expect(apns(["--bogus"]) == "unknown option '--bogus'")
        #expect(apns(["--sandbox=yes"]) == "--sandbox takes no value")
        #expect(apns(["--seed", "1", "--seed", "2"]) == "--seed given more than once")
        #expect(apns(["--environment", "mars"]) == "--environment must be production, sandbox, both, got 'mars'")
        #expect(apns(["--max-streams", "0"]) == "--max-streams must be in 1...4294967295, got 0")
        #expect(apns(["--max-channels", "2000000"]) == "--max-channels must be in 0...1000000, got 2000000")
        #expect(apns(["--management-port", "-1"]) == "--management-port must be in 0...65535, got -1")
        #expect(apns(["--token-update-window", "-1"]) == "--token-update-window must be at least 0.0, got -1")
        #expect(apns(["--token-update-window", "soon"]) == "--token-update-window expects a number, got 'soon'")
        #expect(apns(["--token-lifetime", "1.5"]) == "--token-lifetime expects a whole number, got '1.5'")
        #expect(apns(["--seed", "-1"]) == "--seed expects a whole number, got '-1'")
        #expect(apns(["--cert", "a.pem"]) == "--cert and --key go together")
        #expect(apns(["--keys-dir", "a", "--generate-key", "b"]) == "--keys-dir and --generate-key exclude each other")
        #expect(apns(["--cleartext", "--client-ca", "ca.pem"]) == "--client-ca needs TLS")

        let fcm = { (words: [String]) in Self.refusal(MockFCMOptions.spec, words) { args throws(UsageError) in _ = try MockFCMOptions(args) } }
        #expect(fcm(["--token-lifetime", "0"]) == "--token-lifetime must be in 1...86400, got 0")
        #expect(fcm(["--max-streams", "x"]) == "--max-streams expects a whole number, got 'x'")
        #expect(fcm(["--project", "p", "--service-account", "a.json"]) == "--project names the generated account; --service-account files carry their own")
        #expect(fcm(["--key", "k.pem"]) == "--cert and --key go together")

        let hms = { (words: [String]) in Self.refusal(MockHMSOptions.spec, words) { args throws(UsageError) in _ = try MockHMSOptions(args) } }
        for bad in ["x", "abc:secret", "123:", ":secret", String(repeating: "1", count: 65) + ":s"] {
            #expect(hms(["--app", bad]) == "--app takes id:secret, the id digits (Huawei's client_id)")
        }
        #expect(hms(["--device-quota"]) == "unknown option '--device-quota'")

        let webPush = { (words: [String]) in Self.refusal(MockWebPushOptions.spec, words) { args throws(UsageError) in _ = try MockWebPushOptions(args) } }
        #expect(webPush(["--mint", "0"]) == "--mint takes [prefix:]n with n in 1...100000 and a prefix without '/', not '0'")
        #expect(webPush(["--mint", "a/b:3"]) == "--mint takes [prefix:]n with n in 1...100000 and a prefix without '/', not 'a/b:3'")
        #expect(webPush(["--application-server-key", "zz"]) == "--application-server-key is a P-256 public key, base64url of its 65-byte uncompressed point")
        #expect(webPush(["--jobs-file", "jobs.jsonl"]) == "--subscriptions-file and --jobs-file need --mint")
        #expect(webPush(["--mint", "1", "--jobs-app", "a\"b"]) == "--jobs-app is an app name")
    }

    /// Good values land where they did.
    @Test func goodValuesLandInTheOptions() throws {
        let apns = try MockAPNsOptions.parse(["--management-port", "0", "--cert-topics", "a, ,b", "--environment", "sandbox",
                                              "--token-update-window", "0.5", "--token-lifetime", "60", "--seed", "18446744073709551615",
                                              "--broadcast-bundles", "x", "--max-channels", "3", "--key-id", "K", "--allow-missing-push-type"])
        #expect(apns.managementPort == 0 && apns.certificateTopics == ["a", "b"] && apns.keyEnvironment == .sandbox)
        #expect(apns.tokenUpdateWindow == 0.5 && apns.tokenLifetime == 60 && apns.seed == UInt64.max)
        #expect(apns.broadcastBundleIDs == ["x"] && apns.maxChannels == 3 && apns.keyID == "K" && apns.allowMissingPushType)
        #expect(MockAPNsOptions().keyEnvironment == .both && MockAPNsOptions().maxStreams == 1000 && MockAPNsOptions().certificateTopics == nil)

        let fcm = try MockFCMOptions.parse(["--service-account", "a.json", "--service-account", "b.json", "--service-account-dir", "accounts",
                                            "--generate-tls", "tls", "--device-quota", "--token-lifetime", "5"])
        let here = FileManager.default.currentDirectoryPath
        #expect(fcm.provider.serviceAccounts == ["a.json", "b.json"] && fcm.provider.serviceAccountDir == here + "/accounts")
        #expect(fcm.generateTLS == here + "/tls" && fcm.provider.deviceQuota && fcm.tokenLifetime == 5 && fcm.provider.project == "herald-mock")
        #expect(fcm.maxStreams == 100)

        let hms = try MockHMSOptions.parse(["--app", "1:s", "--app", "22:t:u"])
        #expect(hms.provider.apps == [MockHMSApp(appId: "1", clientSecret: "s"), MockHMSApp(appId: "22", clientSecret: "t:u")])

        let webPush = try MockWebPushOptions(try ParsedArguments.parse(["--mint", "a:2", "--mint", "3", "--jobs-file", "j", "--http1-only"],
                                                                       spec: MockWebPushOptions.spec))
        #expect(webPush.mint.map(\.prefix) == ["a", "sub-"] && webPush.mint.map(\.count) == [2, 3])
        #expect(webPush.jobsFile == here + "/j" && webPush.http1Only && webPush.subscriptionsFile == nil)
    }
}
