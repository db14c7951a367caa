import Glibc
import Reactor

/// A pub/sub connection to one sentinel at a time, subscribed to `+switch-master`: tells `onSwitch` where our
/// master went. After a lost or refused connection it moves to the next sentinel and subscribes again (after
/// 500 ms doubling to 5 s); `onSubscribed` runs on every (re)subscribe, since a switch may have gone unheard.
///
/// Loop-confined; owns its socket (closed in `close()`, or in deinit if never closed). Not a `RedisConnection`:
/// pushed messages have no command to match.
final class SentinelSubscriber: FileDescriptorHandler {
    let settings: SentinelSettings
    let loop: EventLoop
    var onSwitch: ((RedisNodeAddress) -> Void)?
    var onSubscribed: (() -> Void)?
    var onEvent: ((String) -> Void)?
    private var fd: Int32 = -1
    private var reader = RESPReader()
    private var connected = false
    private var closed = false
    private var index = 0
    private var failures = 0
    /// One timer at a time: the pending attempt's timeout or the next attempt. A timer left armed when the
    /// other is set would start a second chain of attempts (each leaking the socket of the one before).
    private var timer: LoopTimer?
    private var buffer = [UInt8](repeating: 0, count: 16_384)

    init(settings: SentinelSettings, loop: EventLoop) {
        self.settings = settings
        self.loop = loop
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func start() { connect() }

    func close() {
        closed = true
        timer?.cancel()
        drop()
    }

    private var sentinel: RedisNodeAddress { settings.sentinels[index % settings.sentinels.count] }

    private func connect() {
        guard !closed else { return }
        timer?.cancel()
        drop()
        let sentinel = self.sentinel
        do {
            guard let address = try Sockets.resolve(host: sentinel.host, port: sentinel.port).first else {
                return lost("\(sentinel) has no address")
            }
            fd = try Sockets.startConnect(to: address)
            try loop.register(fd: fd, handler: self, readable: true, writable: true)
        } catch {
            return lost("\(sentinel): \(error)")
        }
        reader = RESPReader()
        // The connect and the subscription confirmation must both come within the timeout.
        timer = loop.schedule(afterMilliseconds: settings.timeoutMilliseconds) { [weak self] in
            guard let self, !self.connected else { return }
            self.lost("\(sentinel): no subscription within \(self.settings.timeoutMilliseconds) ms")
        }
    }

    func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        guard fd >= 0 else { return }
        if writable {
            if let error = Sockets.connectError(fd) { return lost("\(sentinel): \(error)") }
            try? loop.setInterest(fd: fd, readable: true, writable: false)
            var commands: [[[UInt8]]] = settings.url(of: sentinel).handshake
            commands.append([Array("SUBSCRIBE".utf8), Array("+switch-master".utf8)])
            var output: [UInt8] = []
            for command in commands { RESPEncoder.append(command, to: &output) }
            // A few dozen bytes into a fresh socket's empty buffer: one write.
            guard case .bytes(let n)? = try? SocketIO.write(fd, output), n == output.count else {
                return lost("\(sentinel): could not send SUBSCRIBE")
            }
        }
        if readable || hangup { readAvailable() }
    }

    private func readAvailable() {
        while fd >= 0 {
            let count: Int
            switch try? SocketIO.read(fd, into: &buffer) {
            case .bytes(let n)?: count = n
            case .wouldBlock?: return
            default: return lost("\(sentinel) closed the connection")
            }
            do {
                try reader.feed(buffer, count: count)
                while let message = try reader.next() { handle(message) }
            } catch {
                return lost("\(sentinel): \(error)")
            }
            if fd < 0 { return }
        }
    }

    private func handle(_ message: RESPValue) {
        if let error = message.errorMessage { return lost("\(sentinel) refused: \(error)") }
        guard let parts = message.array, let kind = parts.first?.string else { return }
        if kind == "subscribe" {
            connected = true
            failures = 0
            timer?.cancel()
            onSubscribed?()
        } else if kind == "message", parts.count == 3, let text = parts[2].string, let address = settings.switchedMaster(text) {
            onSwitch?(address)
        }
    }

    private func lost(_ reason: String) {
        timer?.cancel()
        drop()
        guard !closed else { return }
        onEvent?("sentinel subscription lost: \(reason)")
        index += 1
        let delay = min(5_000, 500 << min(failures, 4))
        failures += 1
        timer = loop.schedule(afterMilliseconds: delay) { [weak self] in self?.connect() }
    }

    private func drop() {
        if fd >= 0 {
            loop.unregister(fd: fd)
            Glibc.close(fd)
            fd = -1
        }
        connected = false
    }
}
