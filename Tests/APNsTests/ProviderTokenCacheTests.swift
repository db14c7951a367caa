import APNs
import HeraldTestSupport
import PushCore
import Testing

private let sharedKey: SigningKey = try! SigningKey(pem: KeyGenerator.generateP256PKCS8PEM())

@Suite struct ProviderTokenCacheTests {
    func cache(_ clock: ManualClock, refresh: Int64 = 3000) throws -> ProviderTokenCache {
        try ProviderTokenCache(keyID: "ABCDE12345", teamID: "TEAM123456", key: sharedKey, refreshAfterSeconds: refresh, clock: clock.function)
    }

    @Test func sameTokenUntilRefreshAge() throws {
        let clock = ManualClock(1_000_000)
        let c = try cache(clock)
        #expect(c.issuedAt == nil)
        let first = try c.token()
        #expect(c.issuedAt == 1_000_000)
        clock.advance(2999)
        #expect(try c.token() == first)
        #expect(c.tokensMade == 1)
        clock.advance(1)
        let second = try c.token()
        #expect(second != first)
        #expect(c.issuedAt == 1_003_000)
        #expect(c.tokensMade == 2)
        #expect(try c.bearer == "bearer " + second)
    }

    @Test(arguments: [(Int64(0), Int64(1200)), (1199, 1200), (1200, 1200), (3000, 3000), (3600, 3600), (99999, 3600), (-5, 1200)])
    func refreshAgeIsClamped(asked: Int64, used: Int64) throws {
        #expect(try cache(ManualClock(0), refresh: asked).refreshAfterSeconds == used)
    }

    @Test func serverSaidExpiredRespectsTwentyMinutes() throws {
        let clock = ManualClock(5_000_000)
        let c = try cache(clock)
        let first = try c.token()
        clock.advance(1199)
        #expect(!c.serverSaidExpired(token: first))
        #expect(try c.token() == first)
        clock.advance(1)
        #expect(c.serverSaidExpired(token: first))
        #expect(c.serverSaidExpired(token: first))  // still pending: next token() replaces it
        let second = try c.token()
        #expect(second != first)
        #expect(c.tokensMade == 2)
        // a late report about the old token does not cause another refresh
        #expect(c.serverSaidExpired(token: first))
        #expect(try c.token() == second)
        #expect(!c.serverSaidExpired(token: second))
        #expect(c.tokensMade == 2)
    }

    @Test func clockGoingBackwardsKeepsTheToken() throws {
        let clock = ManualClock(5_000_000)
        let c = try cache(clock)
        let first = try c.token()
        clock.advance(-10_000)
        #expect(try c.token() == first)
    }

    @Test func manyCallersAtOnceMakeOneToken() async throws {
        let clock = ManualClock(7_000_000)
        let c = try cache(clock)
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<64 { group.addTask { try c.token() } }
            var all: Set<String> = []
            for try await t in group { all.insert(t) }
            return all
        }
        #expect(tokens.count == 1)
        #expect(c.tokensMade == 1)
    }

    @Test func badIDsAreRefusedAtInit() {
        #expect(throws: CredentialError.badKeyID("short")) {
            try ProviderTokenCache(keyID: "short", teamID: "TEAM123456", key: sharedKey)
        }
    }
}
