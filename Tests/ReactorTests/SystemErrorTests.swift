import Glibc
import Reactor
import Testing

@Suite struct SystemErrorTests {
    /// Issue 52: an unknown host read "getaddrinfo(x): Name or service not known: Success (errno 0)".
    @Test func aResolverFailureSaysItsOwnWordsWithoutAStraySuccess() throws {
        do {
            _ = try Sockets.resolve(host: "no-such-host.invalid", port: 443)
            Issue.record("an .invalid name resolved")
        } catch {
            #expect(error.description.hasPrefix("getaddrinfo(no-such-host.invalid): "), "\(error)")
            #expect(!error.description.contains("Success") && !error.description.contains("errno 0"), "\(error)")
        }
        #expect(SystemError(call: "connect", errno: ECONNREFUSED).description == "connect: Connection refused (errno \(ECONNREFUSED))")
    }
}
