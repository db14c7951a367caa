import Basics
import CLinux
import Foundation
import Glibc
import Synchronization

/// Receives readiness for one file descriptor. Called on the loop's thread only.
public protocol FileDescriptorHandler: AnyObject {
    func handleIO(readable: Bool, writable: Bool, hangup: Bool)
}

/// One thread, one epoll set, a timer heap and an eventfd for work handed in from other threads.
///
/// Everything registered here (sockets, TLS and HTTP/2 sessions, the Redis connection) is owned by this
/// loop and touched only on its thread, so the hot path never takes a lock or hops threads. Other threads
/// may only `execute`, `submit`, `stop`, `waitUntilStopped` and ask `isInLoop`; every other method checks
/// that it runs on the loop's thread (`preconditionInLoop`, one atomic load and a compare, kept in release
/// builds) and stops the process if not. A value the loop owns travels to other threads only inside a
/// `LoopBound`, which checks the same on every access. Level-triggered: a handler that leaves data unread is
/// simply called again.
///
/// After `run` has returned the loop has no thread: the objects it owned are torn down by whoever drops them
/// last (a deinit that unregisters or cancels a timer), so from then on the loop-only methods pass anywhere.
/// @unchecked: handlers and timers are touched only after `preconditionInLoop`; shared state is Atomic/LockedValue.
public final class EventLoop: @unchecked Sendable {
    private let epollFD: Int32
    private let wakeFD: Int32
    private var handlers: [Int32: FileDescriptorHandler] = [:]
    private var timers = TimerHeap()
    private var timerSequence: UInt64 = 0
    private let inbox = LockedValue(Inbox())
    /// Set once, when `run` has returned: what `waitUntilStopped` waits on. Apart from `inbox` because every
    /// `withLock` wakes the lock's waiters: a thread parked in `waitUntilStopped` on the inbox (the main thread
    /// of `herald api` and `herald worker`) was woken twice per loop iteration, a futex call and a context
    /// switch each time.
    private let finished = LockedValue(false)
    private let stopRequested = Atomic<Bool>(false)
    let owner: LoopThread
    public let name: String

    /// Work handed in from other threads, and whether the loop has finished (then nothing more is taken).
    private struct Inbox {
        var work: [@Sendable () -> Void] = []
        var finished = false
    }

    private init(name: String) throws(SystemError) {
        self.name = name
        owner = LoopThread(name: name)
        ignoreBrokenPipes
        epollFD = try syscall("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        do {
            wakeFD = try syscall("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        } catch {
            close(epollFD)
            throw error
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeFD
        do {
            _ = try syscall("epoll_ctl") { epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) }
        } catch {
            close(epollFD)
            close(wakeFD)
            throw error
        }
    }

    deinit {
        close(epollFD)
        close(wakeFD)
    }

    /// Starts a loop on a new thread of its own and returns it once that thread runs it; `stop()` ends the
    /// thread. The only way to make a loop: a loop always has exactly one thread, known before anyone uses it.
    public static func startThread(name: String = "herald-loop") throws(SystemError) -> EventLoop {
        let loop = try EventLoop(name: name)
        let thread = Thread { loop.run() }
        thread.name = name
        thread.start()
        loop.owner.waitUntilStarted()
        return loop
    }

    /// True on the loop's own thread.
    public var isInLoop: Bool { owner.isCurrent }

    /// Stops the process unless called on the loop's thread (or after the loop has finished). Cheap enough
    /// for every loop-only call; other loop-confined types call it too.
    @inline(__always)
    public func preconditionInLoop(_ call: StaticString = #function) {
        owner.precondition(call)
    }

    /// Traps unless called on this loop's thread: cheap enough (one atomic load) to keep in release builds.
    @inline(__always)
    public func preconditionInLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(isInLoop, "called off the thread of event loop \(name)", file: file, line: line)
    }

    // MARK: descriptors

    private func mask(readable: Bool, writable: Bool) -> UInt32 {
        var events: UInt32 = EPOLLRDHUP.rawValue
        if readable { events |= EPOLLIN.rawValue }
        if writable { events |= EPOLLOUT.rawValue }
        return events
    }

    /// Watches `fd` for the given readiness. The caller keeps owning (and eventually closing) the descriptor.
    public func register(fd: Int32, handler: FileDescriptorHandler, readable: Bool = true, writable: Bool = false) throws(SystemError) {
        preconditionInLoop()
        var event = epoll_event()
        event.events = mask(readable: readable, writable: writable)
        event.data.fd = fd
        _ = try syscall("epoll_ctl(ADD)") { epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) }
        handlers[fd] = handler
    }

    /// Changes what `fd` is watched for (typically: add writability while output is queued).
    public func setInterest(fd: Int32, readable: Bool, writable: Bool) throws(SystemError) {
        preconditionInLoop()
        var event = epoll_event()
        event.events = mask(readable: readable, writable: writable)
        event.data.fd = fd
        _ = try syscall("epoll_ctl(MOD)") { epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event) }
    }

    /// Stops watching `fd`. Call before closing it.
    public func unregister(fd: Int32) {
        preconditionInLoop()
        guard handlers.removeValue(forKey: fd) != nil else { return }
        var event = epoll_event()
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
    }

    public var registeredCount: Int {
        preconditionInLoop()
        return handlers.count
    }

    // MARK: timers

    /// Runs `callback` on the loop after `nanoseconds`. Keep the returned timer to cancel it.
    @discardableResult
    public func schedule(afterNanoseconds nanoseconds: UInt64, _ callback: @escaping () -> Void) -> LoopTimer {
        preconditionInLoop()
        timerSequence &+= 1
        let timer = LoopTimer(deadline: monotonicNanos() &+ nanoseconds, sequence: timerSequence, owner: owner, callback: callback)
        timers.push(timer)
        return timer
    }

    @discardableResult
    public func schedule(afterMilliseconds ms: Int, _ callback: @escaping () -> Void) -> LoopTimer {
        schedule(afterNanoseconds: UInt64(max(0, ms)) * 1_000_000, callback)
    }

    // MARK: cross-thread work

    /// Runs `work` on the loop's thread, soon. Safe from any thread. Work handed to a loop that has finished
    /// is dropped (there is no thread left to run it); `submit` says so instead.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        _ = enqueue(work)
    }

    /// False if the loop has finished and will never run `work`.
    private func enqueue(_ work: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, wasEmpty) = inbox.withLock { inbox -> (Bool, Bool) in
            if inbox.finished { return (false, false) }
            let empty = inbox.work.isEmpty
            inbox.work.append(work)
            return (true, empty)
        }
        if wasEmpty { wake() }
        return accepted
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Runs `body` on the loop, waits for it and returns its result or rethrows its error. For set-up, tests
    /// and CLI tools, never the hot path. On the loop's own thread it simply calls `body`. Throws
    /// `EventLoopStopped` if the loop has finished, instead of waiting for ever.
    public func submit<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        if isInLoop { return try body() }
        let answer = LockedValue<Result<T, any Error>?>(nil)
        let accepted = enqueue {
            let result = Result { try body() }
            answer.withLock { $0 = result }
        }
        guard accepted else { throw EventLoopStopped(name: name) }
        return try answer.wait(until: { $0 != nil }) { $0! }!.get()
    }

    // MARK: running

    /// Asks the loop to return from `run()` after the current iteration. Safe from any thread.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    /// Blocks until the loop has returned from `run()`, or the deadline passes; returns whether it has.
    @discardableResult
    public func waitUntilStopped(timeoutSeconds: Double = 10) -> Bool {
        finished.wait(until: { $0 }, timeoutSeconds: timeoutSeconds) { _ in true } ?? false
    }

    /// Runs the loop on its own thread until `stop()`.
    private func run() {
        owner.begin()
        let capacity = 512
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        while !stopRequested.load(ordering: .acquiring) {
            let timeout = nextTimeoutMilliseconds()
            let count = epoll_wait(epollFD, events, Int32(capacity), timeout)
            if count > 0 {
                for index in 0..<Int(count) {
                    let event = events[index]
                    let fd = event.data.fd
                    if fd == wakeFD {
                        var value: UInt64 = 0
                        _ = read(wakeFD, &value, 8)
                        continue
                    }
                    guard let handler = handlers[fd] else { continue }
                    let bits = event.events
                    handler.handleIO(
                        readable: bits & (EPOLLIN.rawValue | EPOLLPRI.rawValue) != 0,
                        writable: bits & EPOLLOUT.rawValue != 0,
                        hangup: bits & (EPOLLHUP.rawValue | EPOLLERR.rawValue | EPOLLRDHUP.rawValue) != 0)
                }
            }
            fireDueTimers()
            runPendingWork()
        }
        releaseTimersAndHandlers()
        // Work handed in before the stop still runs; once the inbox is empty it closes in the same step.
        runPendingWork(finishing: true)
    }

    /// A finished loop runs no timer and calls no handler again, so it lets go of them here, on its own thread:
    /// otherwise what they captured (a connection that holds this loop) would keep itself and the loop alive
    /// for ever, a cycle LeakSanitizer found. A few rounds, because a deinit may schedule or register again.
    private func releaseTimersAndHandlers() {
        for _ in 0..<8 {
            runPendingWork()
            if timers.isEmpty && handlers.isEmpty { return }
            // Moved out first, so a deinit that schedules or registers meets fresh, empty state.
            let left = (timers, handlers)
            timers = TimerHeap()
            handlers = [:]
            withExtendedLifetime(left) {}
        }
    }

    private func nextTimeoutMilliseconds() -> Int32 {
        if !inbox.withLock({ $0.work.isEmpty }) { return 0 }
        while let top = timers.top, top.callback == nil { _ = timers.pop() }
        guard let top = timers.top else { return -1 }
        let now = monotonicNanos()
        if top.deadline <= now { return 0 }
        let ms = (top.deadline - now + 999_999) / 1_000_000
        return Int32(min(ms, 60_000))
    }

    private func fireDueTimers() {
        let now = monotonicNanos()
        while let top = timers.top, top.deadline <= now {
            _ = timers.pop()
            if let callback = top.callback {
                top.callback = nil
                callback()
            }
        }
    }

    private func runPendingWork(finishing: Bool = false) {
        while true {
            let batch = inbox.withLock { inbox -> [@Sendable () -> Void] in
                let taken = inbox.work
                inbox.work.removeAll(keepingCapacity: true)
                if taken.isEmpty && finishing {
                    // The thread lets go before anyone waiting in `waitUntilStopped` can see the loop finished.
                    owner.end()
                    inbox.finished = true
                }
                return taken
            }
            if batch.isEmpty {
                if finishing { finished.withLock { $0 = true } }
                return
            }
            for work in batch { work() }
        }
    }
}

/// What `submit` throws when the loop has finished: nothing would ever run the work.
public struct EventLoopStopped: Error, CustomStringConvertible, Sendable {
    public let name: String
    public var description: String { "event loop '\(name)' has stopped" }
}

/// A peer that closes a socket while we write to it must give EPIPE, not kill the process with SIGPIPE
/// (OpenSSL writes with write(2), which cannot pass MSG_NOSIGNAL). Done once, when the first loop starts, for
/// every program that runs one: the worker, the simulator as a library inside tests, the CLI tools. Only a
/// default disposition is changed; a handler the program installed itself is left alone.
private let ignoreBrokenPipes: Void = {
    let previous = signal(SIGPIPE, SIG_IGN)
    if previous != nil { _ = signal(SIGPIPE, previous) }
}()

/// The same, for code that writes to sockets without a loop (the blocking Redis client over TLS).
public func ignoreBrokenPipesOnce() { ignoreBrokenPipes }
