import Testing
@testable import WebPush

/// A job must never make Herald request an arbitrary URL: only allowed push-service hosts, no IP literals, no
/// private or loopback addresses unless a test configuration allows them.
@Suite("Web Push push-service policy")
struct PushServicePolicyTests {
    @Test func theVendorsDocumentedHostsAreAllowedByDefault() throws {
        let policy = PushServicePolicy()
        for url in ["https://fcm.googleapis.com/fcm/send/abc", "https://updates.push.services.mozilla.com/wpush/v2/x",
                    "https://web.push.apple.com/QGx", "https://wns2-by3p.notify.windows.com/w/?token=x"] {
            try policy.check(PushEndpoint(url))
        }
    }

    @Test func anyOtherHostIsRefused() throws {
        let policy = PushServicePolicy()
        #expect(throws: PolicyError.hostNotAllowed("evil.example")) { try policy.check(PushEndpoint("https://evil.example/x")) }
        #expect(throws: PolicyError.hostNotAllowed("push.apple.com")) { try policy.check(PushEndpoint("https://push.apple.com/x")) }
        #expect(throws: PolicyError.hostNotAllowed("fcm.googleapis.com.evil.example")) {
            try policy.check(PushEndpoint("https://fcm.googleapis.com.evil.example/x"))
        }
        #expect(throws: PolicyError.hostNotAllowed("xnotify.windows.com")) { try policy.check(PushEndpoint("https://xnotify.windows.com/x")) }
    }

    @Test func ipLiteralsAndPrivateAddressesNeedTheTestSettings() throws {
        let strict = PushServicePolicy(hosts: ["127.0.0.1", "::1", "8.8.8.8"])
        #expect(throws: PolicyError.ipLiteral("127.0.0.1")) { try strict.check(PushEndpoint("https://127.0.0.1:8443/x")) }
        #expect(throws: PolicyError.ipLiteral("::1")) { try strict.check(PushEndpoint("https://[::1]/x")) }
        let literals = PushServicePolicy(hosts: ["127.0.0.1", "8.8.8.8"], allowsIPLiterals: true)
        #expect(throws: PolicyError.privateAddress(host: "127.0.0.1")) { try literals.check(PushEndpoint("https://127.0.0.1:8443/x")) }
        try literals.check(PushEndpoint("https://8.8.8.8/x"))
        let test = PushServicePolicy(hosts: ["127.0.0.1"], allowsIPLiterals: true, allowsPrivateAddresses: true)
        try test.check(PushEndpoint("https://127.0.0.1:8443/x"))
    }

    @Test(arguments: ["127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
                      "0.0.0.0", "224.0.0.1", "::1", "::", "fc00::1", "fd12::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
                      "127.1", "0x7f.1"])
    func nonPublicAddressesAreRecognised(text: String) throws {
        let bytes = try #require(PushServicePolicy.addressBytes(text))
        #expect(PushServicePolicy.isNonPublic(bytes), "\(text)")
    }

    @Test(arguments: ["8.8.8.8", "142.250.74.106", "172.32.0.1", "2a00:1450:4001::200e", "::ffff:8.8.8.8"])
    func publicAddressesPass(text: String) throws {
        let bytes = try #require(PushServicePolicy.addressBytes(text))
        #expect(!PushServicePolicy.isNonPublic(bytes), "\(text)")
    }

    /// Issue 51, item 7: the switches that turn the SSRF protection off, and allow-list entries that match nothing
    /// or a whole top-level domain, are warned about (check-config and the worker's start print these).
    @Test func riskySwitchesAndOverBroadOrDeadEntriesAreWarnedAbout() {
        #expect(PushServicePolicy().warnings(label: "app 'w'").isEmpty)
        let risky = PushServicePolicy(hosts: ["*", "*.com", "push.*.example", "*.push.example.com", "fcm.googleapis.com"],
                                      allowsIPLiterals: true, allowsPrivateAddresses: true)
        #expect(risky.warnings(label: "app 'w'") == [
            "app 'w': webpush.allow_ip_literals is on: subscriptions may name IP addresses (SSRF protection off; for tests against a local simulator only)",
            "app 'w': webpush.allow_private_addresses is on: push services may resolve to loopback and private addresses (SSRF protection off; for tests against a local simulator only)",
            "app 'w': webpush.push_service_hosts entry \"*\" matches nothing (a * stands only as a leading *.)",
            "app 'w': webpush.push_service_hosts entry \"*.com\" allows every host under a top-level domain",
            "app 'w': webpush.push_service_hosts entry \"push.*.example\" matches nothing (a * stands only as a leading *.)",
        ])
    }
}
