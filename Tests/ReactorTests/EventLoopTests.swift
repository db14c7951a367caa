import Foundation
import Basics
import Glibc
import Reactor
import Testing

@Suite struct EventLoopTests {
    @Test func executeRunsOnTheLoopThreadInOrder() throws {
        let loop = try EventLoop.startThread(name: "test")
        defer { loop.stop(); loop.waitUntilStopped() }
        let seen = LockedValue<[Int]>([])
        for value in 1...50 {
            loop.execute {
                #expect(loop.isInLoop)
                seen.withLock { $0.append(value) }
            }
        }
        #expect(seen.wait(until: { $0.count == 50 }, timeoutSeconds: 10) { $0 } == Array(1...50))
        #expect(!loop.isInLoop)
    }

    @Test func timersFireInDeadlineOrderAndCancelledOnesNever() throws {
        let loop = try EventLoop.startThread(name: "timers")
        defer { loop.stop(); loop.waitUntilStopped() }
        let done = DispatchSemaphore(value: 0)
        let order = try loop.submit { () -> LoopBound<[Int]> in
            let order = LoopBound([Int](), loop: loop)
            loop.schedule(afterMilliseconds: 30) { order.value.append(30); done.signal() }
            loop.schedule(afterMilliseconds: 10) { order.value.append(10) }
            let cancelled = loop.schedule(afterMilliseconds: 20) { order.value.append(20) }
            cancelled.cancel()
            #expect(cancelled.isCancelled)
            return order
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(try loop.submit { order.value } == [10, 30])
    }

    @Test func socketReadinessReachesTheHandler() throws {
        let loop = try EventLoop.startThread(name: "io")
        defer { loop.stop(); loop.waitUntilStopped() }
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let got = DispatchSemaphore(value: 0)
        let reader = fds[0]
        let handler = try loop.submit { () -> LoopBound<ReadHandler> in
            let handler = ReadHandler(fd: reader) { got.signal() }
            try loop.register(fd: reader, handler: handler)
            #expect(loop.registeredCount == 1)
            return LoopBound(handler, loop: loop)
        }
        _ = write(fds[1], "hi", 2)
        #expect(got.wait(timeout: .now() + 5) == .success)
        #expect(try loop.submit { handler.value.received } == Array("hi".utf8))
        #expect(try loop.submit { loop.unregister(fd: reader); return loop.registeredCount } == 0)
    }

    @Test func submitReturnsTheValueTheBodyMadeOnTheLoop() throws {
        let loop = try EventLoop.startThread(name: "submit")
        defer { loop.stop(); loop.waitUntilStopped() }
        let answer = try loop.submit { () -> (Bool, String) in (loop.isInLoop, "made on \(loop.name)") }
        #expect(answer == (true, "made on submit"))
    }

    @Test func submitRethrowsTheBodysError() throws {
        let loop = try EventLoop.startThread(name: "submit-error")
        defer { loop.stop(); loop.waitUntilStopped() }
        #expect(throws: SystemError(call: "probe", errno: EBADF)) {
            try loop.submit { () throws -> Int in throw SystemError(call: "probe", errno: EBADF) }
        }
        // The loop is still usable after a body threw.
        #expect(try loop.submit { 7 } == 7)
    }

    @Test func submitOnTheLoopRunsTheBodyInPlace() throws {
        let loop = try EventLoop.startThread(name: "nested")
        defer { loop.stop(); loop.waitUntilStopped() }
        // A submit from the loop's own thread cannot wait for the loop (it would wait for itself for ever).
        let depth = try loop.submit { try loop.submit { try loop.submit { 3 } } }
        #expect(depth == 3)
    }

    @Test func workHandedInBeforeStopStillRunsAndSubmitAfterwardsThrows() throws {
        let loop = try EventLoop.startThread(name: "stopping")
        let ran = LockedValue(0)
        loop.execute {
            // Stop from inside, then hand in more: the loop finishes the work it was given before it ends.
            loop.stop()
            for _ in 0..<3 { loop.execute { ran.withLock { $0 += 1 } } }
        }
        #expect(loop.waitUntilStopped(timeoutSeconds: 10))
        #expect(ran.withLock { $0 } == 3)
        #expect(throws: EventLoopStopped.self) { try loop.submit { 1 } }
        loop.execute { ran.withLock { $0 += 100 } }
        #expect(ran.withLock { $0 } == 3, "work for a finished loop is dropped, not run on the caller's thread")
    }

    @Test func aStoppedLoopLetsGoOfItsTimersAndHandlers() throws {
        let loop = try EventLoop.startThread(name: "release")
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let reader = fds[0]
        let watched = LockedValue<(timer: WeakBox, handler: WeakBox)>((WeakBox(), WeakBox()))
        try loop.submit {
            // Both hold the loop, as a connection does: without the release they would form a cycle with it.
            let captured = Counter()
            captured.loop = loop
            loop.schedule(afterMilliseconds: 3_600_000) { captured.count += 1 }
            let handler = ReadHandler(fd: reader) { _ = loop }
            try loop.register(fd: reader, handler: handler)
            watched.withLock { $0 = (WeakBox(captured), WeakBox(handler)) }
        }
        #expect(watched.withLock { $0.timer.object != nil && $0.handler.object != nil })
        loop.stop()
        #expect(loop.waitUntilStopped())
        #expect(watched.withLock { $0.timer.object == nil }, "the pending timer's closure was released")
        #expect(watched.withLock { $0.handler.object == nil }, "the registered handler was released")
    }

    @Test func loopBoundValueIsReadAndWrittenOnItsLoop() throws {
        let loop = try EventLoop.startThread(name: "bound")
        defer { loop.stop(); loop.waitUntilStopped() }
        let counter = try loop.submit { LoopBound(Counter(), loop: loop) }
        for _ in 0..<10 { loop.execute { counter.value.count += 1 } }
        // Value-typed contents: writes through the box are shared by every holder.
        let numbers = try loop.submit { LoopBound([1], loop: loop) }
        try loop.submit { numbers.value.append(2) }
        #expect(try loop.submit { counter.value.count } == 10)
        #expect(try loop.submit { numbers.value } == [1, 2])
        #expect(counter.loop === loop)
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

/// Not Sendable on purpose: it reaches the test thread only inside a `LoopBound`.
private final class Counter {
    var count = 0
    var loop: EventLoop?
}

/// Watches an object's lifetime from another thread (only `object == nil` is asked there).
private final class WeakBox: @unchecked Sendable {
    weak var object: AnyObject?
    init(_ object: AnyObject? = nil) { self.object = object }
}

private final class ReadHandler: FileDescriptorHandler {
    let fd: Int32
    let onRead: () -> Void
    var received: [UInt8] = []
    init(fd: Int32, onRead: @escaping () -> Void) { self.fd = fd; self.onRead = onRead }
    func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        var buffer = [UInt8](repeating: 0, count: 64)
        guard case .bytes(let n) = try? SocketIO.read(fd, into: &buffer) else { return }
        received += buffer[0..<n]
        onRead()
    }
}
