import Foundation
import Glibc
import Reactor
import Testing

@Suite struct EventLoopTests {
    @Test func executeRunsOnTheLoopThreadInOrder() throws {
        let loop = try EventLoop.startThread(name: "test")
        defer { loop.stop(); loop.waitUntilStopped() }
        let seen = try loop.submitAndWait { () -> [Int] in
            #expect(loop.isInLoop)
            return [1, 2, 3]
        }
        #expect(seen == [1, 2, 3])
        #expect(!loop.isInLoop)
    }

    @Test func timersFireInDeadlineOrderAndCancelledOnesNever() throws {
        let loop = try EventLoop.startThread(name: "timers")
        defer { loop.stop(); loop.waitUntilStopped() }
        let done = DispatchSemaphore(value: 0)
        let order = OrderBox()
        try loop.submitAndWait {
            loop.schedule(afterMilliseconds: 30) { order.values.append(30); done.signal() }
            loop.schedule(afterMilliseconds: 10) { order.values.append(10) }
            let cancelled = loop.schedule(afterMilliseconds: 20) { order.values.append(20) }
            cancelled.cancel()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        let values = try loop.submitAndWait { order.values }
        #expect(values == [10, 30])
    }

    @Test func socketReadinessReachesTheHandler() throws {
        let loop = try EventLoop.startThread(name: "io")
        defer { loop.stop(); loop.waitUntilStopped() }
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let got = DispatchSemaphore(value: 0)
        let handler = ReadHandler(fd: fds[0]) { got.signal() }
        try loop.submitAndWait { try loop.register(fd: fds[0], handler: handler) }
        _ = write(fds[1], "hi", 2)
        #expect(got.wait(timeout: .now() + 5) == .success)
        let bytes = try loop.submitAndWait { handler.received }
        #expect(bytes == Array("hi".utf8))
        try loop.submitAndWait { loop.unregister(fd: fds[0]) }
    }

    @Test func systemErrorsNameTheCall() {
        #expect(throws: SystemError.self) { try syscall("close") { close(-1) } }
        do { _ = try syscall("close") { close(-1) } } catch {
            #expect(error.call == "close")
            #expect(error.errno == EBADF)
        }
    }

    @Test func listenAcceptConnectOnLoopback() throws {
        let listener = try Sockets.listen(host: "127.0.0.1", port: 0)
        defer { close(listener) }
        let port = Sockets.localPort(listener)
        #expect(port > 0)
        let address = try #require(Sockets.resolve(host: "127.0.0.1", port: port).first)
        let client = try Sockets.startConnect(to: address)
        defer { close(client) }
        var accepted: Int32? = nil
        let deadline = Date().addingTimeInterval(5)
        while accepted == nil && Date() < deadline {
            accepted = try Sockets.accept(listener)
            if accepted == nil { usleep(1000) }
        }
        let server = try #require(accepted)
        close(server)
        #expect(Sockets.connectError(client) == nil)
    }
}

private final class OrderBox: @unchecked Sendable { var values: [Int] = [] }

private final class ReadHandler: FileDescriptorHandler, @unchecked Sendable {
    let fd: Int32
    let onRead: () -> Void
    var received: [UInt8] = []
    init(fd: Int32, onRead: @escaping () -> Void) { self.fd = fd; self.onRead = onRead }
    func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(fd, &buffer, 64)
        if n > 0 { received += buffer[0..<n]; onRead() }
    }
}
