import Foundation
import Glibc
import Synchronization

/// Lines of a file descriptor as bytes, in linear time and bounded memory: each byte is scanned for the
/// newline once, a line longer than `maxLineBytes` is skipped to its newline without being buffered (it
/// yields an empty line and is listed in `overlong`, so numbering stays right and none of it is pushed),
/// and a multi-gigabyte file never sits in memory whole. A class so the caller still sees `overlong` and
/// `readError` after handing it to a consumer; ends early once `stop` is requested.
final class LineReader: Sequence, IteratorProtocol {
    private let fd: Int32
    let maxLineBytes: Int
    private let stop: StopRequest?
    private var buffer: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: LineReader.chunkSize)
    private var start = 0
    /// Bytes after `start` already known to hold no newline.
    private var scanned = 0
    /// Inside an over-long line: its bytes so far, discarded, until its newline.
    private var skipping: Int?
    private var finished = false
    private var lineNumber = 0
    /// 1-based numbers and lengths of the lines longer than `maxLineBytes`.
    private(set) var overlong: [(line: Int, bytes: Int)] = []
    /// Why reading stopped early, if it failed (EIO, ...).
    private(set) var readError: String?
    private static let chunkSize = 256 * 1024

    init(fd: Int32, maxLineBytes: Int, stop: StopRequest?) {
        self.fd = fd
        self.maxLineBytes = maxLineBytes
        self.stop = stop
    }

    func next() -> [UInt8]? {
        while true {
            if stop?.signal != nil { return nil }
            if let newline = newlineIndex(from: start + scanned) {
                let end = newline > start && buffer[newline - 1] == 13 ? newline - 1 : newline
                defer { start = newline + 1; scanned = 0 }
                return finishLine(bytes: buffer[start..<end])
            }
            scanned = buffer.count - start
            if skipping == nil && scanned > maxLineBytes + 1 { skip() }
            if finished {
                guard skipping != nil || start < buffer.count else { return nil }
                defer { start = buffer.count; scanned = 0 }
                return finishLine(bytes: buffer[start...])
            }
            fill()
        }
    }

    /// memchr: a byte-by-byte generic search runs at a few MB/s in debug builds.
    private func newlineIndex(from index: Int) -> Int? {
        guard index < buffer.count else { return nil }
        return buffer.withUnsafeBufferPointer { bytes in
            memchr(bytes.baseAddress! + index, 10, bytes.count - index).map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - bytes.baseAddress! }
        }
    }

    /// One line ends: its bytes, or an empty line when it (with what was skipped of it) is too long.
    private func finishLine(bytes: ArraySlice<UInt8>) -> [UInt8] {
        lineNumber += 1
        let length = (skipping ?? 0) + bytes.count
        skipping = nil
        guard length <= maxLineBytes else {
            overlong.append((lineNumber, length))
            return []
        }
        return Array(bytes)
    }

    /// Drops the buffered start of an over-long line; `finishLine` reports it.
    private func skip() {
        skipping = (skipping ?? 0) + buffer.count - start
        buffer.removeAll(keepingCapacity: true)
        start = 0
        scanned = 0
    }

    /// Reads one chunk (waiting for input or a stop request, whichever comes first).
    private func fill() {
        if skipping != nil { skip() }
        if start > 0 {
            // Only the unfinished tail moves: at most one chunk, so reading stays linear.
            buffer.removeFirst(start)
            start = 0
        }
        if let stop {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: stop.wakeFD, events: Int16(POLLIN), revents: 0)]
            while poll(&fds, 2, -1) < 0 && errno == EINTR {}
            if fds[1].revents != 0 && fds[0].revents == 0 { return }  // next() sees the request
        }
        var n: Int
        repeat {
            n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        } while n < 0 && errno == EINTR
        // Through a buffer pointer: one memcpy (a generic element-wise append is slow in debug builds).
        if n > 0 { chunk.withUnsafeBufferPointer { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: $0[0..<n])) } }
        if n < 0 { readError = String(cString: strerror(errno)) }
        if n <= 0 { finished = true }
    }
}

/// A graceful stop asked for by SIGINT or SIGTERM: which signal, and a pipe that becomes readable so a
/// blocked `poll` wakes up.
final class StopRequest: Sendable {
    private let received = Atomic<Int32>(0)
    let wakeFD: Int32
    private let notifyFD: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        // Two signals at most are written (the second exits), so the write end never fills and may block.
        guard pipe(&fds) == 0 else { fatalError("pipe: \(String(cString: strerror(errno)))") }
        wakeFD = fds[0]
        notifyFD = fds[1]
    }

    deinit {
        close(wakeFD)
        close(notifyFD)
    }

    /// The signal that asked for the stop, nil before one came.
    var signal: Int32? {
        let value = received.load(ordering: .acquiring)
        return value == 0 ? nil : value
    }

    func request(signal number: Int32) {
        _ = received.compareExchange(expected: 0, desired: number, ordering: .acquiringAndReleasing)
        var byte: UInt8 = 1
        _ = write(notifyFD, &byte, 1)
    }
}
