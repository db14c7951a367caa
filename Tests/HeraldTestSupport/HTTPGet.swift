import Foundation
import Glibc

/// A minimal blocking HTTP/1.1 exchange on loopback for tests: sends `request` as given (so tests can send
/// garbage too) and reads until the server closes, with a receive deadline. Returns the status (0 when the
/// answer had no status line) and the body.
public func httpExchange(port: Int, request: [UInt8], timeoutSeconds: Int = 10) throws -> (status: Int, headers: String, body: String) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket failed") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw TestSupportError("connect to 127.0.0.1:\(port) failed (errno \(errno))") }
    var sent = 0
    while sent < request.count {
        let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n <= 0 { break }  // the server may close early (an oversized head): read what it answered
        sent += n
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n <= 0 {
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw TestSupportError("no answer within \(timeoutSeconds) s") }
            break
        }
        answer += buffer[0..<n]
    }
    let text = String(decoding: answer, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n") else { return (0, text, "") }
    let head = String(text[..<split.lowerBound])
    let parts = head.split(separator: " ", maxSplits: 2)
    return (parts.count > 1 ? Int(parts[1]) ?? 0 : 0, head, String(text[split.upperBound...]))
}

/// GET `path` on 127.0.0.1:`port`; a chunked body (Prometheus answers one past about 2 KB) comes back decoded.
public func httpGet(port: Int, _ path: String, timeoutSeconds: Int = 10) throws -> (status: Int, body: String) {
    let answer = try httpExchange(port: port, request: Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8), timeoutSeconds: timeoutSeconds)
    guard answer.headers.lowercased().contains("\r\ntransfer-encoding: chunked") else { return (answer.status, answer.body) }
    return (answer.status, try dechunked(answer.body))
}

/// A chunked body's data (RFC 9112 7.1): hexadecimal sizes, each chunk's data after its line, to the zero chunk.
func dechunked(_ body: String) throws -> String {
    var rest = Substring(body)
    var data = ""
    while let line = rest.range(of: "\r\n") {
        let sizeText = rest[..<line.lowerBound].prefix { $0 != ";" }
        guard let size = Int(sizeText, radix: 16) else { throw TestSupportError("bad chunk size line: \(sizeText)") }
        if size == 0 { return data }
        let utf8 = rest[line.upperBound...].utf8
        guard utf8.count >= size else { throw TestSupportError("a chunk of \(size) bytes cut short") }
        let end = utf8.index(utf8.startIndex, offsetBy: size)
        data += String(Substring(utf8[..<end]))
        rest = Substring(utf8[end...].dropFirst(2))  // its CRLF (in a String one Character: dropped as bytes)
    }
    throw TestSupportError("a chunked body without its last chunk")
}
