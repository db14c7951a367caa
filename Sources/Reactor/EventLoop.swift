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
/// loop and touched only on its thread, so the hot path never takes a lock or hops threads. The only
/// thread-safe entry points are `execute`, `stop`, `submitAndWait` and `isInLoop`; every other method must be
/// called on the loop's thread. Level-triggered: a handler that leaves data unread is simply called again.
public final class EventLoop: @unchecked Sendable {
    private let epollFD: Int32
    private let wakeFD: Int32
    private var handlers: [Int32: FileDescriptorHandler] = [:]
    private var timers = TimerHeap()
    private var timerSequence: UInt64 = 0
    private let pending = Mutex<[PendingWork]>([])
    private let loopThread = Atomic<UInt>(0)
    private let stopRequested = Atomic<Bool>(false)
    private let finished = Mutex<Bool>(false)
    private let finishedSignal = DispatchSemaphore(value: 0)
    public let name: String

    public init(name: String = "herald-loop") throws(SystemError) {
        self.name = name
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

    /// Starts a loop on a new thread of its own and returns it; `stop()` ends the thread.
    public static func startThread(name: String = "herald-loop") throws(SystemError) -> EventLoop {
        let loop = try EventLoop(name: name)
        let thread = Thread { loop.run() }
        thread.name = name
        thread.start()
        return loop
    }

    /// True on the loop's own thread.
    public var isInLoop: Bool {
        let current = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
        return loopThread.load(ordering: .acquiring) == current
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
        var event = epoll_event()
        event.events = mask(readable: readable, writable: writable)
        event.data.fd = fd
        _ = try syscall("epoll_ctl(ADD)") { epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) }
        handlers[fd] = handler
    }

    /// Changes what `fd` is watched for (typically: add writability while output is queued).
    public func setInterest(fd: Int32, readable: Bool, writable: Bool) throws(SystemError) {
        var event = epoll_event()
        event.events = mask(readable: readable, writable: writable)
        event.data.fd = fd
        _ = try syscall("epoll_ctl(MOD)") { epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event) }
    }

    /// Stops watching `fd`. Call before closing it.
    public func unregister(fd: Int32) {
        guard handlers.removeValue(forKey: fd) != nil else { return }
        var event = epoll_event()
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
    }

    public var registeredCount: Int { handlers.count }

    // MARK: timers

    /// Runs `callback` on the loop after `nanoseconds`. Keep the returned timer to cancel it.
    @discardableResult
    public func schedule(afterNanoseconds nanoseconds: UInt64, _ callback: @escaping () -> Void) -> LoopTimer {
        timerSequence &+= 1
        let timer = LoopTimer(deadline: monotonicNanos() &+ nanoseconds, sequence: timerSequence, callback: callback)
        timers.push(timer)
        return timer
    }

    @discardableResult
    public func schedule(afterMilliseconds ms: Int, _ callback: @escaping () -> Void) -> LoopTimer {
        schedule(afterNanoseconds: UInt64(max(0, ms)) * 1_000_000, callback)
    }

    // MARK: cross-thread work

    /// Runs `work` on the loop's thread, soon. Safe from any thread; the only way other threads talk to a loop.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        enqueue(work)
    }

    private func enqueue(_ work: @escaping () -> Void) {
        let wasEmpty = pending.withLock { list -> Bool in
            let empty = list.isEmpty
            list.append(PendingWork(run: work))
            return empty
        }
        if wasEmpty { wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Runs `body` on the loop and waits for its result. For set-up, tests and CLI tools, never the hot path.
    /// On the loop's own thread it simply calls `body`.
    public func submitAndWait<T>(_ body: @escaping () throws -> T) throws -> T {
        if isInLoop { return try body() }
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        let work: () -> Void = {
            box.result = Result { try body() }
            done.signal()
        }
        enqueue(work)
        done.wait()
        return try box.result!.get()
    }

    // MARK: running

    /// Asks the loop to return from `run()` after the current iteration. Safe from any thread.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    /// Blocks until a loop started with `startThread` has returned from `run()`, or the deadline passes.
    @discardableResult
    public func waitUntilStopped(timeoutSeconds: Double = 10) -> Bool {
        if finished.withLock({ $0 }) { return true }
        return finishedSignal.wait(timeout: .now() + timeoutSeconds) == .success
    }

    /// Runs the loop on the calling thread until `stop()`.
    public func run() {
        loopThread.store(UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))), ordering: .releasing)
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
        runPendingWork()
        loopThread.store(0, ordering: .releasing)
        finished.withLock { $0 = true }
        finishedSignal.signal()
    }

    private func nextTimeoutMilliseconds() -> Int32 {
        if !pending.withLock({ $0.isEmpty }) { return 0 }
        while let top = timers.top, top.isCancelled { _ = timers.pop() }
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

    private func runPendingWork() {
        while true {
            let batch = pending.withLock { list -> [PendingWork] in
                let taken = list
                list.removeAll(keepingCapacity: true)
                return taken
            }
            if batch.isEmpty { return }
            for work in batch { work.run() }
        }
    }
}

/// Work handed in from another thread; it only ever runs on the loop's thread, hence the unchecked conformance.
private struct PendingWork: @unchecked Sendable {
    let run: () -> Void
}

/// A peer that closes a socket while we write to it must give EPIPE, not kill the process with SIGPIPE
/// (OpenSSL writes with write(2), which cannot pass MSG_NOSIGNAL). Done once, when the first loop starts, for
/// every program that runs one: the worker, the simulator as a library inside tests, the CLI tools. Only a
/// default disposition is changed; a handler the program installed itself is left alone.
private let ignoreBrokenPipes: Void = {
    let previous = signal(SIGPIPE, SIG_IGN)
    if previous != nil { _ = signal(SIGPIPE, previous) }
}()

private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, Error>?
}
