import Glibc
import Reactor
import TLS

/// A synchronous Redis client for CLI tools (`herald stats`, `herald enqueue`) and tests: one socket, each call
/// waits for its replies (with the command timeout), pipelines when asked.
///
/// `rediss://` runs a blocking TLS handshake (`poll`, within the connect timeout) with `tls` or the system trust store.
///
/// Not Sendable and not thread-safe: use one per thread. Owns its socket and `RESPReader` (freed in `deinit`).
/// No reconnect: after an I/O error or timeout it is broken (`RedisError.connectionLost` / `.timeout`); make a new one.
public final class BlockingRedis {
    public let url: RedisURL
    private var fd: Int32 = -1
    private var transport = RedisTransport.pending
    /// A reply byte arrived: a failure from now on loses the connection, before it the connection never worked
    /// (a TLS refusal of the client certificate, a TLS port reached in plain) and says why as `.connectFailed`.
    private var received = false
    private let reader = RESPReader()
    private let timeoutMilliseconds: Int32
    private var readBuffer = [UInt8](repeating: 0, count: 65_536)

    public init(url: RedisURL, tls: TLSContext? = nil, connectTimeoutMilliseconds: Int = 2_000,
                commandTimeoutMilliseconds: Int = 10_000) throws(RedisError) {
        self.url = url
        self.timeoutMilliseconds = Int32(commandTimeoutMilliseconds)
        let addresses: [SocketAddress]
        switch url.endpoint {
        case .unix(let path): addresses = [SocketAddress(unixPath: path)]
        case .tcp(let host, let port):
            do { addresses = try Sockets.resolve(host: host, port: port) } catch { throw .connectFailed("\(error)") }
        }
        var lastError = "no address"
        for address in addresses {
            do {
                let socket = try Sockets.startConnect(to: address)
                if Self.poll(socket, events: Int16(POLLOUT), timeout: Int32(connectTimeoutMilliseconds)) {
                    if let error = Sockets.connectError(socket) {
                        lastError = "\(address): \(error)"
                        Glibc.close(socket)
                        continue
                    }
                    fd = socket
                    break
                }
                Glibc.close(socket)
                lastError = "\(address): connect timed out"
            } catch {
                lastError = "\(address): \(error)"
            }
        }
        guard fd >= 0 else { throw .connectFailed(lastError) }
        try startTransport(tls: tls, deadline: monotonicNanos() &+ UInt64(max(0, connectTimeoutMilliseconds)) * 1_000_000)
        for command in url.handshake {
            do {
                _ = try self.command(command)
            } catch {
                throw .connectFailed("\(String(decoding: command[0], as: UTF8.self)) refused: \(error)")
            }
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    public func command(_ args: [[UInt8]]) throws(RedisError) -> RESPValue {
        let reply = try pipeline(rawCommands: [args])[0]
        if case .error(let message) = reply { throw .server(message) }
        return reply
    }

    /// Sends all commands in one write and returns every reply in order; error replies come back as `.error`
    /// values in the array (they do not throw).
    public func pipeline(rawCommands commands: [[[UInt8]]]) throws(RedisError) -> [RESPValue] {
        guard fd >= 0 else { throw .connectionLost }
        var output: [UInt8] = []
        for command in commands { RESPEncoder.append(command, to: &output) }
        try writeAll(output)
        var replies: [RESPValue] = []
        replies.reserveCapacity(commands.count)
        while replies.count < commands.count {
            if let reply = try reader.next() {
                replies.append(reply)
                continue
            }
            try readSome()
        }
        return replies
    }

    /// EVALSHA with EVAL fallback on NOSCRIPT; a top-level error reply throws `.server`.
    public func evalScript(_ script: RedisScript, keys: [[UInt8]], args: [[UInt8]]) throws(RedisError) -> RESPValue {
        let reply = try pipeline(rawCommands: [script.evalsha(keys: keys, args: args)])[0]
        if RedisScript.isNoScript(reply) { return try command(script.eval(keys: keys, args: args)) }
        if case .error(let message) = reply { throw .server(message) }
        return reply
    }

    public func close() {
        transport.shutdown()
        transport = .pending
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    /// Plain at once; TLS handshakes step by step, polling for what OpenSSL wants, until `deadline`.
    private func startTransport(tls: TLSContext?, deadline: UInt64) throws(RedisError) {
        do throws(RedisTransport.Failure) {
            transport = try RedisTransport.start(for: url, tls: tls, fd: fd)
            while true {
                let events: Int16
                switch try transport.handshake() {
                case .done: return
                case .wantRead: events = Int16(POLLIN)
                case .wantWrite: events = Int16(POLLOUT)
                }
                let now = monotonicNanos()
                guard now < deadline, Self.poll(fd, events: events, timeout: Int32((deadline - now) / 1_000_000)) else {
                    throw RedisTransport.Failure(description: "connect timed out\(transport.timeoutHint)")
                }
            }
        } catch {
            close()
            throw .connectFailed(error.description)
        }
    }

    private func fail(_ error: RedisError) -> RedisError {
        close()
        return error
    }

    private func writeAll(_ bytes: [UInt8]) throws(RedisError) {
        var offset = 0
        while offset < bytes.count {
            switch try io({ () throws(RedisTransport.Failure) in try transport.write(fd, bytes, from: offset) }) {
            case .bytes(let written): offset += written
            case .wouldBlock, .endOfFile:
                guard Self.poll(fd, events: Int16(POLLOUT), timeout: timeoutMilliseconds) else { throw fail(.timeout) }
            }
        }
    }

    private func readSome() throws(RedisError) {
        while true {
            switch try io({ () throws(RedisTransport.Failure) in try transport.read(fd, into: &readBuffer) }) {
            case .bytes(let count):
                received = true
                try reader.feed(readBuffer, count: count)
                return
            case .endOfFile: throw fail(.connectionLost)
            case .wouldBlock:
                guard Self.poll(fd, events: Int16(POLLIN), timeout: timeoutMilliseconds) else { throw fail(.timeout) }
            }
        }
    }

    /// One `SocketIO` call; a failed read or write loses the connection (closed here, like every failure).
    private func io(_ call: () throws(RedisTransport.Failure) -> IOProgress) throws(RedisError) -> IOProgress {
        do { return try call() } catch { throw fail(received ? .connectionLost : .connectFailed(error.description)) }
    }

    private static func poll(_ fd: Int32, events: Int16, timeout: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        let deadline = monotonicNanos() &+ UInt64(max(0, timeout)) * 1_000_000
        while true {
            let now = monotonicNanos()
            let left = now >= deadline ? 0 : Int32((deadline - now) / 1_000_000)
            let rc = Glibc.poll(&entry, 1, left)
            if rc > 0 { return true }
            if rc == 0 { return false }
            if errno != EINTR { return true }
        }
    }
}
