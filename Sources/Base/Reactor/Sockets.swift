import CLinux
import Glibc

/// Plain socket calls shared by the HTTP/2 client, the simulator and the Redis connection.
/// Every descriptor returned is non-blocking and close-on-exec; the caller owns and closes it.
public enum Sockets {
    /// Resolves `host` afresh (no cache: APNs wants an uncached lookup per new connection), IPv4 and IPv6.
    public static func resolve(host: String, port: Int) throws(SystemError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw SystemError(call: "getaddrinfo(\(host)): \(String(cString: gai_strerror(rc)))", errno: rc == EAI_SYSTEM ? clinux_errno() : 0)
        }
        defer { freeaddrinfo(first) }
        var result: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let addr = entry.pointee.ai_addr {
                result.append(SocketAddress(raw: addr, length: entry.pointee.ai_addrlen, family: entry.pointee.ai_family))
            }
            cursor = entry.pointee.ai_next
        }
        return result
    }

    /// Starts a non-blocking connect. Returns the descriptor; completion shows up as writability,
    /// then `connectError(fd)` tells whether it worked.
    public static func startConnect(to address: SocketAddress) throws(SystemError) -> Int32 {
        let fd = try syscall("socket") { socket(address.family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0) }
        do {
            _ = try nonBlockingSyscall("connect") {
                address.withSockaddr { connect(fd, $0, $1) }
            }
        } catch {
            close(fd)
            throw error
        }
        if address.family != AF_UNIX { setNoDelay(fd) }
        return fd
    }

    /// The pending error of a non-blocking connect, or nil when connected.
    public static func connectError(_ fd: Int32) -> SystemError? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) != 0 {
            return SystemError(call: "getsockopt(SO_ERROR)", errno: clinux_errno())
        }
        return value == 0 ? nil : SystemError(call: "connect", errno: value)
    }

    public static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A listening TCP socket on `host:port` (port 0 picks a free one; see `localPort`).
    public static func listen(host: String, port: Int, backlog: Int32 = 1024) throws(SystemError) -> Int32 {
        let addresses = try resolve(host: host, port: port)
        guard let address = addresses.first else { throw SystemError(call: "getaddrinfo(\(host))", errno: ENOENT) }
        let fd = try syscall("socket") { socket(address.family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        do {
            _ = try syscall("bind") { address.withSockaddr { bind(fd, $0, $1) } }
            _ = try syscall("listen") { Glibc.listen(fd, backlog) }
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Accepts one pending connection, or nil when none is waiting.
    public static func accept(_ listener: Int32) throws(SystemError) -> Int32? {
        let fd = try nonBlockingSyscall("accept4") { clinux_accept4(listener, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue)) }
        if let fd { setNoDelay(fd) }
        return fd
    }

    /// The port a socket is bound to.
    public static func localPort(_ fd: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return 0 }
        let family = storage.ss_family
        return withUnsafePointer(to: &storage) { pointer -> Int in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }
}

/// A resolved socket address (IPv4, IPv6 or Unix path), copied out of getaddrinfo's list.
public struct SocketAddress: Sendable, CustomStringConvertible {
    let bytes: [UInt8]
    public let family: Int32

    init(raw: UnsafePointer<sockaddr>, length: socklen_t, family: Int32) {
        self.bytes = Array(UnsafeRawBufferPointer(start: raw, count: Int(length)))
        self.family = family
    }

    /// A Unix-domain socket path.
    public init(unixPath: String) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(unixPath.utf8.prefix(107))
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in pathBytes.enumerated() { buffer[index] = byte }
        }
        self.bytes = withUnsafeBytes(of: &address) { Array($0) }
        self.family = AF_UNIX
    }

    /// The IP address itself (4 bytes for IPv4, 16 for IPv6), nil for a Unix socket: what an address policy
    /// judges before the connect.
    public var ipBytes: [UInt8]? {
        if family == AF_INET, bytes.count >= 8 { return Array(bytes[4..<8]) }
        if family == AF_INET6, bytes.count >= 24 { return Array(bytes[8..<24]) }
        return nil
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        bytes.withUnsafeBytes { buffer in
            body(buffer.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(buffer.count))
        }
    }

    public var description: String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        if family == AF_UNIX { return "unix socket" }
        let rc = withSockaddr { getnameinfo($0, $1, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV) }
        guard rc == 0 else { return "unknown address" }
        let h = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let s = String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return family == AF_INET6 ? "[\(h)]:\(s)" : "\(h):\(s)"
    }
}
